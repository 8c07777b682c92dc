"""The brick processes of the test stack's volume, the gluster CLI, and
the volume options and volumes some tests set up for themselves.

brick_pids(stack) asks the stack's glusterd (`gluster volume status
--xml`), so it names only this stack's bricks: a test platform's stack on
the same machine (test/platform) runs its own glusterd with a volume of
the same name, whose brick processes a match on the command line would
take for these.
"""

import errno
import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

# The volume options of Gluster's `samba` group that make Gluster announce
# changes (upcalls) and md-cache trust its entries for 600 s; with them
# glusterfs2 keeps metadata up to 60 s and relies on the announcements.
UPCALL_OPTIONS = [('features.cache-invalidation', 'on'),
                  ('features.cache-invalidation-timeout', '600'),
                  ('performance.cache-invalidation', 'on'),
                  ('performance.md-cache-timeout', '600')]


def gluster(*args, check=True):
    """Run the gluster CLI in script mode; with check, a non-zero exit is
    an AssertionError that carries the CLI's output."""
    p = subprocess.run(['gluster', '--mode=script'] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError('gluster %s: %s' % (' '.join(args), p.stdout))
    return p


def brick_pids(stack):
    """{brick path: pid} of the volume's bricks that are online."""
    out = subprocess.run(['gluster', '--mode=script', 'volume', 'status',
                          stack['GLUSTER_VOLUME'], '--xml'],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, check=True,
                         timeout=120).stdout
    pids = {}
    for node in ET.fromstring(out).iter('node'):
        path = node.findtext('path') or ''
        pid = int(node.findtext('pid') or 0)
        if path.startswith('/') and pid > 0 and \
                node.findtext('status') == '1':
            pids[path] = pid
    return pids


def _gluster_volume(*args):
    """`gluster volume ARGS`, asked again for up to about 30 s while
    glusterd refuses it (it takes one volume transaction at a time, and
    other stacks' commands share it): a reset that gave up at the first
    refusal left a test's translator (delay-gen) on the volume for every
    later test."""
    cmd = ['gluster', '--mode=script', 'volume'] + list(args)
    for _ in range(15):
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, universal_newlines=True)
        if p.returncode == 0:
            return
        time.sleep(2)
    raise subprocess.CalledProcessError(p.returncode, cmd, stderr=p.stderr)


def gluster_set(vol, key, value):
    _gluster_volume('set', vol, key, value)


def gluster_reset(vol, key):
    _gluster_volume('reset', vol, key)


def profile_fops(vol):
    """{FOP: calls} the bricks of vol received since the last call
    (`gluster volume profile VOL info incremental`; the profile must have
    been started), summed over the bricks."""
    out = subprocess.run(['gluster', '--mode=script', 'volume', 'profile',
                          vol, 'info', 'incremental'],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         universal_newlines=True, timeout=120).stdout
    n = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) > 2 and f[-1].isupper() and f[-2].isdigit():
            n[f[-1]] = n.get(f[-1], 0) + int(f[-2])
    return n


def restart_volume(vol, mount):
    """volume stop and start (the bricks take a new translator only when
    they start again), then wait until the FUSE mount writes to every
    brick again: it and the gfapi clients reconnect by themselves."""
    subprocess.run(['gluster', '--mode=script', 'volume', 'stop', vol],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(['gluster', '--mode=script', 'volume', 'start', vol],
                   check=True, stdout=subprocess.DEVNULL)
    if wait_mount_writes(mount, 60):
        return
    # Gluster's FUSE client can stay away from a restarted brick for
    # good (seen with GlusterFS 11.1 when the brick's old listener was
    # still bound as it came back: new clients connect, the mount never
    # does).  The mount is the tests' tool, not what they test: mount it
    # again, and say so.
    source = mount_source(mount)
    print('restart_volume: %s did not reach every brick of %s within 60 '
          's; mounting %s again' % (mount, vol, source), file=sys.stderr)
    subprocess.run(['umount', '-l', mount], check=True)
    subprocess.run(['mount', '-t', 'glusterfs', source, mount], check=True,
                   timeout=120)
    if not wait_mount_writes(mount, 60):
        raise OSError(errno.EIO, 'the FUSE mount %s cannot write to every '
                      'brick of %s after the volume restarted, mounted '
                      'again or not' % (mount, vol))


def wait_mount_writes(mount, seconds):
    """True once the FUSE mount creates and removes files whose names
    spread over every brick (by their hashes), within seconds."""
    probes = [os.path.join(mount, '.restart-probe-%d-%d' % (os.getpid(), i))
              for i in range(16)]
    deadline = time.monotonic() + seconds
    while True:
        try:
            for probe in probes:
                with open(probe, 'wb') as f:
                    f.write(b'x')
                os.unlink(probe)
            return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.5)


def mount_source(mount):
    """What /proc/mounts says is mounted on mount (server:/volume)."""
    with open('/proc/mounts') as f:
        for line in f:
            fields = line.split()
            if len(fields) > 2 and fields[1] == mount:
                return fields[0]
    raise OSError(errno.ENOENT, '%s is not mounted' % mount)


def delayed_fops(stack, fops, delay):
    """A generator for a fixture: delay-gen holds the fops (e.g. 'read')
    delay seconds on the bricks, inserted above the posix translator
    (debug.delay-gen names where).  delay-gen reads its options only when
    the brick starts, so the volume is restarted with it and again
    without it."""
    vol = stack['GLUSTER_VOLUME']
    keys = {'delay-gen.enable': fops,
            'delay-gen.delay-percentage': '100',
            'delay-gen.delay-duration': str(int(delay * 1e6)),
            'debug.delay-gen': 'posix'}
    try:
        for k, v in keys.items():
            gluster_set(vol, k, v)
        restart_volume(vol, stack['FUSE_MOUNT'])
        yield
    finally:
        for k in reversed(list(keys)):
            gluster_reset(vol, k)
        restart_volume(vol, stack['FUSE_MOUNT'])


def _remove_volume(vol, mount, brick_dir):
    """vol unmounted from mount, stopped, deleted and its bricks removed,
    whatever of it is there."""
    g = ['gluster', '--mode=script', 'volume']
    subprocess.run(['umount', '-l', mount], stderr=subprocess.DEVNULL)
    subprocess.run(g + ['stop', vol, 'force'],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run(g + ['delete', vol],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(brick_dir, ignore_errors=True)


def one_brick_volume(stack, suffix):
    """A generator for a fixture: a one-brick volume of this stack's own
    (GLUSTER_VOLUME + suffix), FUSE-mounted, yielded as (name, mount);
    removed afterwards."""
    vol = stack['GLUSTER_VOLUME'] + suffix
    brick = os.path.join(stack['STACK_DIR'], 'bricks', vol, 'b1')
    mount = os.path.join(stack['STACK_DIR'], 'fuse-' + vol)
    g = ['gluster', '--mode=script', 'volume']
    _remove_volume(vol, mount, os.path.dirname(brick))
    os.makedirs(brick)
    os.makedirs(mount, exist_ok=True)
    try:
        subprocess.run(g + ['create', vol, '%s:%s' % (
            stack['GLUSTER_HOST'], brick), 'force'], check=True,
            stdout=subprocess.DEVNULL)
        subprocess.run(g + ['set', vol, 'server.allow-insecure', 'on'],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run(g + ['start', vol], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run(['mount', '-t', 'glusterfs', '%s:/%s' % (
            stack['GLUSTER_HOST'], vol), mount], check=True)
        os.chmod(mount, 0o1777)
        yield vol, mount
    finally:
        _remove_volume(vol, mount, os.path.dirname(brick))


def restart_bricks(stack):
    """Kill the volume's bricks and start them again (volume start
    force), waiting until every one is online and its old process gone."""
    vol = stack['GLUSTER_VOLUME']
    nb = len(stack['BRICK_DIRS'].split())
    old = brick_pids(stack)
    for pid in old.values():
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    for pid in old.values():
        deadline = time.monotonic() + 30
        while os.path.exists('/proc/%d' % pid) and \
                time.monotonic() < deadline:
            time.sleep(0.2)
    deadline = time.monotonic() + 90
    while True:
        gluster('volume', 'start', vol, 'force', check=False)
        now = brick_pids(stack)
        if len(now) == nb and not set(now.values()) & set(old.values()):
            break
        assert time.monotonic() < deadline, 'bricks not back: %r' % now
        time.sleep(2)
    time.sleep(3)                   # the clients reconnect


def delayed_brick_fops(stack, fops, delay_ms, also=()):
    """A generator for a fixture: delay-gen in the bricks' graphs, holding
    the fops (e.g. 'WRITE') delay_ms each: a translator added to a brick
    graph, and delay-gen's settings, take effect when the brick
    (re)starts, so the bricks are killed and started again (the clients
    stay connected); then the (key, value) pairs of also are set.  Yields
    the volume's name; everything is reset afterwards and the bricks
    started again."""
    vol = stack['GLUSTER_VOLUME']
    gluster('volume', 'set', vol, 'delay-gen.delay-percentage', '100%')
    gluster('volume', 'set', vol, 'delay-gen.delay-duration',
            str(delay_ms * 1000))
    gluster('volume', 'set', vol, 'delay-gen.enable', fops)
    gluster('volume', 'set', vol, 'debug.delay-gen', 'posix')
    restart_bricks(stack)
    for k, v in also:
        gluster('volume', 'set', vol, k, v)
    yield vol
    for opt in [k for k, _ in also] + [
            'debug.delay-gen', 'delay-gen.enable',
            'delay-gen.delay-percentage', 'delay-gen.delay-duration']:
        gluster('volume', 'reset', vol, opt, check=False)
    restart_bricks(stack)
