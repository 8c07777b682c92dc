"""The CTDB cluster lock held through libgfapi (ctdb_mutex_glusterfs2_helper).

The helper speaks CTDB's mutex helper protocol (ctdb/server/
ctdb_cluster_mutex.c): one byte on stdout, '0' held, '1' contention, '3'
error; while it holds the lock it keeps running, and its exit tells ctdbd
the lock is lost.  Each test runs the built helper against a real volume,
as ctdbd would (ctdbd is its parent, here the test process):

- two helpers on one lock file: the second answers '1'; after SIGTERM to
  the first (ctdbd's release) or SIGKILL (a node that dies) the lock is
  free for the next one;
- the lock file removed or replaced by another Gluster client (FUSE), and
  the brick holding it killed, stopped, or the holder's node cut off
  from the bricks (a network namespace whose veth goes down): the holder
  exits non-zero within its recheck interval and says why, before a
  helper elsewhere is given the lock; a release (SIGTERM) the bricks
  cannot answer ends within that interval too;
- its parent gone: it exits and the lock is free;
- bad arguments and an unknown volume: '3' and a message, never '0'.
"""

import os
import shutil
import signal
import subprocess
import time
import uuid

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
HELPER = os.path.join(TOP, 'build', 'ctdb_mutex_glusterfs2_helper')
RECHECK = 1


@pytest.fixture(scope='module')
def helper():
    if not os.access(HELPER, os.X_OK):
        pytest.fail('%s is not built (./waf build)' % HELPER)
    return HELPER


class Holder:
    """One helper process, started as ctdbd starts it."""

    def __init__(self, args):
        self.p = subprocess.Popen(args, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)

    def answer(self, timeout=60):
        fd = self.p.stdout.fileno()
        end = time.time() + timeout
        import select
        while time.time() < end:
            r, _, _ = select.select([fd], [], [], 0.5)
            if r:
                return os.read(fd, 1).decode() or 'EOF'
        return 'none'

    def wait_exit(self, timeout):
        try:
            return self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stderr(self):
        return self.p.stderr.read().decode(errors='replace')

    def stop(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


@pytest.fixture
def holders():
    made = []

    def start(*args):
        h = Holder(list(args))
        made.append(h)
        return h
    yield start
    for h in made:
        h.stop()


def lock_args(stack, helper, name, recheck=RECHECK):
    return [helper, stack['GLUSTER_HOST'], stack['GLUSTER_VOLUME'],
            '/' + name, str(recheck)]


def take_within(holders, args, timeout):
    """A helper answers '0' within TIMEOUT seconds (retrying on '1')."""
    end = time.time() + timeout
    seen = []
    while True:
        h = holders(*args)
        a = h.answer()
        seen.append(a)
        if a == '0':
            return h
        h.wait_exit(30)
        if time.time() > end:
            pytest.fail('no lock within %ds, answers %s' % (timeout, seen))
        time.sleep(0.5)


def test_contention_release_and_kill(stack, helper, holders):
    name = 'ctdb-%s.lock' % uuid.uuid4().hex[:8]
    args = lock_args(stack, helper, name)
    a = holders(*args)
    assert a.answer() == '0'
    b = holders(*args)
    assert b.answer() == '1', 'a second holder got the same lock'
    assert b.wait_exit(30) == 0
    # ctdbd releases with SIGTERM: the helper ends and the lock is free
    a.p.send_signal(signal.SIGTERM)
    assert a.wait_exit(30) == 0, a.stderr()
    c = holders(*args)
    assert c.answer() == '0', 'the lock was not released by SIGTERM'
    # a holder that dies (SIGKILL): the bricks drop its lock with its
    # connection
    c.p.kill()
    c.p.wait()
    take_within(holders, args, 20)
    os.unlink(os.path.join(stack['FUSE_MOUNT'], name))


@pytest.mark.parametrize('how', ['removed', 'replaced'])
def test_lost_when_the_file_goes(stack, helper, holders, how):
    name = 'ctdb-%s.lock' % uuid.uuid4().hex[:8]
    path = os.path.join(stack['FUSE_MOUNT'], name)
    h = holders(*lock_args(stack, helper, name))
    assert h.answer() == '0'
    time.sleep(RECHECK + 1)
    assert h.p.poll() is None, 'the holder ended with its lock in place: ' + \
        h.stderr()
    if how == 'removed':
        os.unlink(path)
    else:
        with open(path + '.new', 'w') as f:
            f.write('x')
        os.rename(path + '.new', path)
    rc = h.wait_exit(RECHECK + 15)
    assert rc == 1, 'holder still running (rc %r) after the lock file was %s' \
        % (rc, how)
    err = h.stderr()
    assert 'lock lost' in err, err
    assert ('gone' if how == 'removed' else 'replaced') in err, err
    if os.path.exists(path):
        os.unlink(path)


def test_parent_gone(stack, helper, holders, tmp_path):
    name = 'ctdb-%s.lock' % uuid.uuid4().hex[:8]
    args = lock_args(stack, helper, name, recheck=0)
    out = tmp_path / 'answer'
    # the parent (a shell standing in for ctdbd) prints the helper's pid
    # and waits; killing it leaves the helper orphaned
    sh = subprocess.Popen(
        ['sh', '-c', '"$@" > %s & echo $!; wait' % out, 'sh'] + args,
        stdout=subprocess.PIPE)
    pid = int(sh.stdout.readline())
    end = time.time() + 60
    while time.time() < end and not (out.exists() and out.read_bytes()):
        time.sleep(0.2)
    assert out.read_bytes() == b'0', 'the first helper did not take the lock'
    b = holders(*args)
    assert b.answer() == '1'
    sh.kill()
    sh.wait()
    end = time.time() + 15
    while time.time() < end and os.path.exists('/proc/%d' % pid):
        time.sleep(0.2)
    assert not os.path.exists('/proc/%d' % pid), \
        'the helper outlived its parent'
    take_within(holders, args, 20)
    os.unlink(os.path.join(stack['FUSE_MOUNT'], name))


@pytest.mark.parametrize('case,expect', [
    ('few', 'Usage'),
    ('recheck-word', 'bad RECHECK_SECS'),
    ('recheck-negative', 'bad RECHECK_SECS'),
    ('recheck-huge', 'bad RECHECK_SECS'),
    ('relative-path', 'PATH absolute'),
    ('port-zero', 'bad port'),
    ('port-word', 'bad port'),
    ('no-server', 'no volfile server'),
    ('unknown-volume', 'cannot reach volume'),
])
def test_bad_arguments(stack, helper, case, expect):
    host, vol = stack['GLUSTER_HOST'], stack['GLUSTER_VOLUME']
    argv = {
        'few': [host, vol],
        'recheck-word': [host, vol, '/x.lock', 'five'],
        'recheck-negative': [host, vol, '/x.lock', '-1'],
        'recheck-huge': [host, vol, '/x.lock', '99999'],
        'relative-path': [host, vol, 'x.lock'],
        'port-zero': [host + ':0', vol, '/x.lock'],
        'port-word': [host + ':glusterd', vol, '/x.lock'],
        'no-server': [',', vol, '/x.lock'],
        'unknown-volume': [host, 'nosuchvol' + uuid.uuid4().hex[:6],
                           '/x.lock'],
    }[case]
    p = subprocess.run([helper] + argv, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    assert p.stdout == b'3', (case, p.stdout, p.stderr)
    assert p.returncode != 0
    assert expect in p.stderr.decode(errors='replace'), p.stderr


def gl(*args, timeout=120):
    return subprocess.run(['gluster', '--mode=script'] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=timeout)


@pytest.fixture
def brick_volume(stack):
    """A one-brick volume of this test's own (killing its brick disturbs
    no other test)."""
    vol = stack['GLUSTER_VOLUME'] + 'mutex'
    brick = os.path.join(stack['STACK_DIR'], 'bricks', vol)
    host = stack['GLUSTER_HOST']
    if gl('volume', 'info', vol).returncode == 0:
        gl('volume', 'stop', vol, 'force')
        gl('volume', 'delete', vol)
    shutil.rmtree(brick, ignore_errors=True)
    os.makedirs(brick)
    p = gl('volume', 'create', vol, '%s:%s' % (host, brick), 'force')
    assert p.returncode == 0, p.stdout
    p = gl('volume', 'start', vol)
    assert p.returncode == 0, p.stdout
    yield vol, brick
    gl('volume', 'stop', vol, 'force')
    gl('volume', 'delete', vol)
    shutil.rmtree(brick, ignore_errors=True)


def brick_pid(vol):
    p = gl('volume', 'status', vol, '--xml')
    import re
    m = re.search(r'<pid>(\d+)</pid>', p.stdout)
    assert m and int(m.group(1)) > 0, p.stdout
    return int(m.group(1))


def test_lost_when_the_brick_dies(stack, helper, holders, brick_volume):
    vol, _ = brick_volume
    args = [helper, stack['GLUSTER_HOST'], vol, '/ctdb.lock', str(RECHECK)]
    h = holders(*args)
    assert h.answer() == '0', h.stderr()
    time.sleep(RECHECK + 1)
    assert h.p.poll() is None, h.stderr()
    os.kill(brick_pid(vol), signal.SIGKILL)
    rc = h.wait_exit(RECHECK + 30)
    assert rc == 1, 'holder still running (rc %r) with its brick dead' % rc
    assert 'lock lost' in h.stderr()
    # the brick back: the lock can be taken again, nobody holds it
    time.sleep(1)
    p = gl('volume', 'start', vol, 'force')
    assert p.returncode == 0, p.stdout
    take_within(holders, args, 60)


def test_lost_when_the_brick_hangs(stack, helper, holders, brick_volume):
    """The brick stopped (SIGSTOP), not gone: the connection stays up and
    gfapi's calls wait for Gluster's ping timeout (42 s).  The holder's
    check, unanswered after RECHECK seconds, counts as lost: it exits
    well before the ping timeout could end the wait."""
    vol, _ = brick_volume
    args = [helper, stack['GLUSTER_HOST'], vol, '/ctdb.lock', str(RECHECK)]
    h = holders(*args)
    assert h.answer() == '0', h.stderr()
    time.sleep(RECHECK + 1)
    assert h.p.poll() is None, h.stderr()
    pid = brick_pid(vol)
    os.kill(pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        # the next check starts within RECHECK + 1 s and counts as lost
        # RECHECK s later; the watchdog looks once a second
        rc = h.wait_exit(3 * RECHECK + 10)
        took = time.monotonic() - t0
    finally:
        os.kill(pid, signal.SIGCONT)
    assert rc == 1, 'holder still running (rc %r) %.0f s after its brick ' \
        'stopped answering' % (rc, took)
    err = h.stderr()
    assert 'lock lost' in err and 'not answered within' in err, err
    print('hung brick: lock lost %.1f s after the SIGSTOP' % took)
    # the brick answering again: the lock can be taken again
    take_within(holders, args, 60)


@pytest.fixture
def rep3_volume(stack):
    """A replica 3 volume of this test's own, its three bricks here."""
    vol = stack['GLUSTER_VOLUME'] + 'mutex3'
    host = stack['GLUSTER_HOST']
    bricks = [os.path.join(stack['STACK_DIR'], 'bricks', vol, 'b%d' % i)
              for i in range(3)]
    if gl('volume', 'info', vol).returncode == 0:
        gl('volume', 'stop', vol, 'force')
        gl('volume', 'delete', vol)
    for b in bricks:
        shutil.rmtree(b, ignore_errors=True)
        os.makedirs(b)
    p = gl('volume', 'create', vol, 'replica', '3',
           *['%s:%s' % (host, b) for b in bricks], 'force')
    assert p.returncode == 0, p.stdout
    p = gl('volume', 'start', vol)
    assert p.returncode == 0, p.stdout
    yield vol
    gl('volume', 'stop', vol, 'force')
    gl('volume', 'delete', vol)
    for b in bricks:
        shutil.rmtree(b, ignore_errors=True)


def brick_pids(vol):
    p = gl('volume', 'status', vol, '--xml')
    import re
    pids = [int(x) for x in re.findall(r'<pid>(\d+)</pid>', p.stdout)]
    return [x for x in pids if x > 0]


def test_replica3_hung_brick_old_holder_lost_before_new_one_takes(
        stack, helper, holders, rep3_volume):
    """Replica 3, one brick stopped (SIGSTOP) under the holder: the old
    holder must say "lock lost" (within its recheck bound), and before a
    second node's helper, asking for the lock from the moment of the
    stop, is given it.  Both times are printed."""
    vol = rep3_volume
    args = [helper, stack['GLUSTER_HOST'], vol, '/ctdb.lock', str(RECHECK)]
    old = holders(*args)
    assert old.answer() == '0', old.stderr()
    time.sleep(RECHECK + 1)
    assert old.p.poll() is None, old.stderr()
    pid = brick_pids(vol)[0]
    os.kill(pid, signal.SIGSTOP)
    t_taken = None
    try:
        t0 = time.monotonic()
        t_lost = None
        new = None
        while time.monotonic() - t0 < 120:
            if t_lost is None and old.p.poll() is not None:
                t_lost = time.monotonic() - t0
            if new is None or new.p.poll() is not None:
                new = holders(*args)
            a = new.answer(timeout=0.5)
            if a == '0':
                t_taken = time.monotonic() - t0
                break
        rc = old.p.poll()
        if t_lost is None and rc is not None:
            t_lost = time.monotonic() - t0
    finally:
        os.kill(pid, signal.SIGCONT)
    err = old.stderr() if old.p.poll() is not None else ''
    print('replica 3, hung brick: old holder %s, new holder took the lock '
          '%s' % ('exited %.1f s after the stop (%s)' % (t_lost, err.strip())
                  if rc is not None else 'still running',
                  '%.1f s after the stop' % t_taken if t_taken else
                  'not within 120 s'))
    assert rc == 1 and 'lock lost' in err, \
        'the old holder still believed it held the lock %s after the ' \
        'stop (new holder: %s) %r' % (
            '%.0f s' % (time.monotonic() - t0),
            'took it after %.1f s' % t_taken if t_taken else 'none', err)
    if t_taken is not None:
        assert t_lost <= t_taken, (t_lost, t_taken)


class Node:
    """A node of its own for a helper: a network namespace joined to the
    host by a veth pair, addresses 10.252.(port mod 256).1 (host end) and
    .2 (node end), /30.  The node reaches glusterd and the bricks (which
    listen on every address) only through that pair, and resolves the
    bricks' host name to the host end (ip netns exec binds
    /etc/netns/NAME/hosts over /etc/hosts).  cut() takes the node's end
    of the pair down: the node loses every path to the bricks while the
    bricks, glusterd and every other client stay as they were."""

    IF = 'eth0'

    def __init__(self, stack):
        port = int(os.environ.get('GF2_STACK_PORT', '4450'))
        self.ns = 'gf2mx%d' % port
        self.host_veth = 'gf2mx%dh' % port
        net = '10.252.%d' % (port % 256)
        self.host_ip = net + '.1'
        self.node_ip = net + '.2'
        self.etc = os.path.join('/etc/netns', self.ns)
        self.gluster_host = stack['GLUSTER_HOST']

    def ip(self, *args, ns=False):
        cmd = (['ip', 'netns', 'exec', self.ns] if ns else []) + \
            ['ip'] + list(args)
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=30)
        assert p.returncode == 0, (cmd, p.stdout)
        return p.stdout

    def up(self):
        self.down()
        used = subprocess.run(['ip', '-4', '-o', 'addr', 'show', 'to',
                               self.host_ip + '/30'],
                              stdout=subprocess.PIPE,
                              universal_newlines=True).stdout
        assert not used.strip(), '%s/30 already in use: %s' % (
            self.host_ip, used)
        self.ip('netns', 'add', self.ns)
        self.ip('link', 'add', self.host_veth, 'type', 'veth', 'peer',
                'name', self.ns + 'n')
        self.ip('link', 'set', self.ns + 'n', 'netns', self.ns)
        self.ip('link', 'set', self.ns + 'n', 'name', self.IF, ns=True)
        self.ip('addr', 'add', self.host_ip + '/30', 'dev', self.host_veth)
        self.ip('link', 'set', self.host_veth, 'up')
        self.ip('link', 'set', 'lo', 'up', ns=True)
        self.ip('addr', 'add', self.node_ip + '/30', 'dev', self.IF, ns=True)
        self.ip('link', 'set', self.IF, 'up', ns=True)
        os.makedirs(self.etc, exist_ok=True)
        with open(os.path.join(self.etc, 'hosts'), 'w') as f:
            f.write('127.0.0.1 localhost\n%s %s\n' % (
                self.host_ip, self.gluster_host))

    def cut(self):
        self.ip('link', 'set', self.IF, 'down', ns=True)

    def run(self, args):
        return ['ip', 'netns', 'exec', self.ns] + list(args)

    def down(self):
        subprocess.run(['ip', 'link', 'del', self.host_veth],
                       stderr=subprocess.DEVNULL)
        subprocess.run(['ip', 'netns', 'del', self.ns],
                       stderr=subprocess.DEVNULL)
        shutil.rmtree(self.etc, ignore_errors=True)


@pytest.fixture
def node(stack):
    n = Node(stack)
    n.up()
    yield n
    n.down()


def node_lock_args(node, helper, vol, recheck=RECHECK):
    # the volfile server by the host end's address, the bricks by name
    return node.run([helper, node.host_ip, vol, '/ctdb.lock', str(recheck)])


def test_replica3_partition_old_holder_lost_before_new_one_takes(
        stack, helper, holders, rep3_volume, node):
    """Replica 3, the holder's node cut off from all three bricks (its
    veth down): the old holder must say "lock lost" (its check unanswered
    within RECHECK seconds), and before a helper on the host, asking for
    the lock from the moment of the cut, is given it.  Both times are
    printed."""
    vol = rep3_volume
    old = holders(*node_lock_args(node, helper, vol))
    assert old.answer() == '0', old.stderr()
    args = [helper, stack['GLUSTER_HOST'], vol, '/ctdb.lock', str(RECHECK)]
    # the host's helper meets the node's lock: one lock, seen from both
    other = holders(*args)
    assert other.answer() == '1', 'the host took the lock the node holds'
    time.sleep(RECHECK + 1)
    assert old.p.poll() is None, old.stderr()
    node.cut()
    t0 = time.monotonic()
    t_lost = t_taken = None
    new = None
    while time.monotonic() - t0 < 120:
        if t_lost is None and old.p.poll() is not None:
            t_lost = time.monotonic() - t0
        if new is None or new.p.poll() is not None:
            new = holders(*args)
        if new.answer(timeout=0.5) == '0':
            t_taken = time.monotonic() - t0
            break
    rc = old.p.poll()
    if t_lost is None and rc is not None:
        t_lost = time.monotonic() - t0
    err = old.stderr() if rc is not None else ''
    print('replica 3, partition: old holder %s, new holder took the lock '
          '%s' % ('exited %.1f s after the cut (%s)' % (t_lost, err.strip())
                  if rc is not None else 'still running',
                  '%.1f s after the cut' % t_taken if t_taken else
                  'not within 120 s'))
    assert rc == 1 and 'lock lost' in err, \
        'the old holder still believed it held the lock %.0f s after the ' \
        'cut (new holder: %s) %r' % (
            time.monotonic() - t0,
            'took it after %.1f s' % t_taken if t_taken else 'none', err)
    assert 'not answered within %d s' % RECHECK in err, err
    if t_taken is not None:
        assert t_lost <= t_taken, (t_lost, t_taken)


def test_release_during_partition_does_not_block(
        stack, helper, holders, rep3_volume, node):
    """ctdbd's SIGTERM reaching a holder whose node is cut off: the
    release (an unlock the bricks cannot answer) is bounded by RECHECK
    seconds too; the helper exits then, it does not wait for Gluster's
    ping timeout (42 s)."""
    recheck = 5
    vol = rep3_volume
    old = holders(*node_lock_args(node, helper, vol, recheck))
    assert old.answer() == '0', old.stderr()
    time.sleep(2)
    assert old.p.poll() is None, old.stderr()
    node.cut()
    t0 = time.monotonic()
    # ip netns exec execs the helper: the pid is the helper's
    old.p.send_signal(signal.SIGTERM)
    rc = old.wait_exit(recheck + 15)
    took = time.monotonic() - t0
    err = old.stderr() if rc is not None else ''
    print('partition, SIGTERM: helper exited %s' % (
        'after %.1f s (rc %r, %s)' % (took, rc, err.strip())
        if rc is not None else 'not within %d s' % (recheck + 15)))
    assert rc is not None, 'the release blocked for %.0f s during the ' \
        'partition' % took
    # an unlock unanswered is no release: ctdbd must not read it as one
    assert rc == 1 and 'not answered within %d s' % recheck in err, (rc, err)
