"""The native async data path under a chosen number of SMB2
requests in flight.

libsmbclient and smbclient choose their own queue depth, so these tests
drive the share with test/tools/smb2q (impacket session setup, then its
own pipelined READ/WRITE loop that keeps exactly DEPTH requests
outstanding and checks every byte read against a seeded pattern):

  - 1 GiB round trips at depth 1, 8 and 64: the sha256 read back equals
    the sha256 written and the pattern's own sha256, smb2q really had
    DEPTH requests outstanding, and the file seen through the FUSE mount
    of the same volume has the same sha256 (the bytes reached Gluster).
  - 16 clients at once, each writing then reading its own 64 MiB file at
    depth 8: every client finishes within a deadline (a lost completion
    shows up as smb2q's "no response for N s" or as the deadline, never
    as a hang of the test run) with the right checksums.
  - Disconnect with I/O in flight: smb2q `abandon` puts 64 reads and 64
    writes of 1 MiB in flight and resets the TCP connection, five times.
    The smbd processes that served those connections exit (without a
    PANIC in the logs), the bricks hold no descriptor for the file and
    their descriptor counts return to the baseline, and a new connection
    reads the file correctly.

GF2_ASYNC_SHARE=glusterfs runs the same tests against the stock module
(for comparison; default glusterfs2).  Each test prints its smb2q results
(MB/s per direction) as JSON lines; run pytest with -s to see them.
"""

import hashlib
import json
import os
import re
import stat
import subprocess
import sys
import time
import uuid

import pytest

from gf2_bricks import brick_pids
from gf2_logs import log_offsets, panics_since

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TOOLS = os.path.join(TOP, 'test', 'tools')
SMB2Q = os.path.join(TOOLS, 'smb2q')
sys.path.insert(0, TOOLS)

try:
    import impacket  # noqa: F401
    import smb2q
except ImportError as e:
    IMPORT_ERROR = str(e)
else:
    IMPORT_ERROR = None

SHARE = os.environ.get('GF2_ASYNC_SHARE', 'glusterfs2')
KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30

# smb2q waits this long for any response before failing with "a lost
# completion?"; the subprocess deadlines below are the last resort.
RESPONSE_TIMEOUT = 60
ABANDON_RUNS = 5
SMBD_EXIT_TIMEOUT = 45      # glfs_fini alone takes ~10 s (gluster #2606)
FD_SETTLE_TIMEOUT = 60
FD_SLACK = 2


# Every smbd process that served an smb2q run of this module: (pid, what).
# The last test checks that none of them crashed, on the way out included.
SERVED = []
LOG_OFFSETS = {}


@pytest.fixture(autouse=True)
def _need_impacket():
    if IMPORT_ERROR is not None:
        pytest.fail('python3-impacket is missing (%s): run '
                    'scripts/install-deps' % IMPORT_ERROR)


@pytest.fixture(autouse=True)
def _log_offsets(stack):
    if not LOG_OFFSETS:
        LOG_OFFSETS.update(log_offsets(stack))


# -- helpers ------------------------------------------------------------------

def smb2q_argv(stack, action, path, size, depth, req, seed, share=SHARE):
    return [SMB2Q, '--host', stack['SMB_HOST'], '--port', stack['SMB_PORT'],
            '--user', stack['SMB_USER'], '--password', stack['SMB_PASS'],
            '--share', share, '--file', path, '--size', str(size),
            '--depth', str(depth), '--req-size', str(req), '--seed',
            str(seed), '--timeout', str(RESPONSE_TIMEOUT), action]


def parse_result(argv, rc, out, err):
    if rc != 0:
        pytest.fail('smb2q %s exited %d:\n%s%s' % (
            ' '.join(argv[-15:]), rc, err, out))
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        pytest.fail('smb2q printed no JSON result:\n%s\n%s' % (out, err))


def run_smb2q(stack, action, path, size, depth, req, seed, timeout,
              share=SHARE):
    argv = smb2q_argv(stack, action, path, size, depth, req, seed, share)
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail('smb2q %s of %s (depth %d) did not finish within %d s: '
                    'a hang (lost completion?)' % (action, path, depth,
                                                   timeout))
    r = parse_result(argv, p.returncode, p.stdout, p.stderr)
    print(json.dumps(r, sort_keys=True))
    served(r)
    return r


def served(r):
    if r.get('server_pid'):
        SERVED.append((r['server_pid'], '%s %s depth %d' % (
            r['action'], r['file'], r['depth'])))


def pattern_sha256(seed, size):
    pat = smb2q.Pattern(seed)
    h = hashlib.sha256()
    off = 0
    while off < size:
        n = min(4 * MiB, size - off)
        h.update(pat.generate(off, n))
        off += n
    return h.hexdigest()


def fuse_path(stack, name):
    return os.path.join(stack['FUSE_MOUNT'], name)


def fuse_sha256(stack, name):
    """sha256 of the file as Gluster has it, read through the FUSE mount
    (not through smbd); the page cache is dropped first."""
    fd = os.open(fuse_path(stack, name), os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        h = hashlib.sha256()
        size = 0
        while True:
            b = os.read(fd, 4 * MiB)
            if not b:
                break
            h.update(b)
            size += len(b)
        return h.hexdigest(), size
    finally:
        os.close(fd)


def remove(stack, *names):
    for name in names:
        try:
            os.unlink(fuse_path(stack, name))
        except FileNotFoundError:
            pass


def stack_smbd_parent(stack):
    with open(os.path.join(stack['SMB_LOGDIR'], 'run', 'smbd.pid')) as f:
        return int(f.read().split()[0])


def stack_smbd_children(stack):
    """PIDs of the children of the stack's smbd (as test_brick_fds.py)."""
    p = subprocess.run(['pgrep', '-P', str(stack_smbd_parent(stack))],
                       stdout=subprocess.PIPE, universal_newlines=True)
    return set(int(x) for x in p.stdout.split())


def alive_child(pid, parent):
    """pid still exists as a (non-zombie) child of parent."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            fields = f.read().rsplit(')', 1)[1].split()
    except OSError:
        return False
    return fields[0] != 'Z' and int(fields[1]) == parent


def process_alive(pid):
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


def wait_smbd_exit(stack, pids, timeout=SMBD_EXIT_TIMEOUT):
    """Wait until the smbd children in `pids` are gone; return the ones
    still there after `timeout`."""
    parent = stack_smbd_parent(stack)
    deadline = time.time() + timeout
    while True:
        left = {p for p in pids if alive_child(p, parent)}
        if not left or time.time() > deadline:
            return left
        time.sleep(0.5)


def brick_fds(pid):
    """Targets of a brick process's descriptors."""
    out = []
    d = '/proc/%d/fd' % pid
    for fd in os.listdir(d):
        try:
            out.append(os.readlink(os.path.join(d, fd)))
        except OSError:
            pass
    return out


def brick_file_fds(pid):
    """Count a brick's descriptors except directories and sockets.

    test_brick_fds.py counts every descriptor; that total is no use on a
    shared stack: it moves with every gfapi client connected (a socket per
    live smbd process of anyone) and with the stock module's directory
    leak (other people's benchmarks leave thousands of directory
    descriptors on the bricks, growing while they run).  What an abandoned
    connection could leak here is a descriptor on the file it had open:
    regular files (and anything else that is not a directory or socket)
    stay flat on the bricks between runs."""
    n = 0
    d = '/proc/%d/fd' % pid
    for fd in os.listdir(d):
        try:
            mode = os.stat(os.path.join(d, fd)).st_mode
        except OSError:
            continue
        if not stat.S_ISDIR(mode) and not stat.S_ISSOCK(mode):
            n += 1
    return n


def gfid_of(stack, name):
    return os.getxattr(fuse_path(stack, name),
                       'glusterfs.gfid.string').decode().strip('\0')


def fds_on(pids, gfid, name):
    """Brick descriptors on the file (by its gfid handle or its path)."""
    return {p: [t for t in brick_fds(p)
                if t.endswith('/' + gfid) or t.endswith('/' + name)]
            for p in pids}


# -- tests --------------------------------------------------------------------

@pytest.mark.parametrize('depth,req', [(1, MiB), (8, MiB), (64, 64 * KiB)],
                         ids=['depth1-1M', 'depth8-1M', 'depth64-64K'])
def test_roundtrip_1g(stack, tmpname, depth, req):
    name = '%s-d%d' % (tmpname, depth)
    seed = uuid.uuid4().hex[:8]
    try:
        t0 = time.time()
        r = run_smb2q(stack, 'roundtrip', name, GiB, depth, req, seed,
                      timeout=600)
        elapsed = time.time() - t0
        assert r['size'] == GiB
        assert r['max_outstanding_observed'] == depth, \
            'smb2q had at most %d requests outstanding, not %d' % (
                r['max_outstanding_observed'], depth)
        assert r['write_max_outstanding'] == depth
        assert r['read_max_outstanding'] == depth
        want = pattern_sha256(seed, GiB)
        assert r['write_sha256'] == want, 'smb2q wrote something else'
        assert r['read_sha256'] == r['write_sha256'], \
            'read back %s, wrote %s' % (r['read_sha256'], r['write_sha256'])
        got, size = fuse_sha256(stack, name)
        assert size == GiB, 'the FUSE mount sees %d bytes' % size
        assert got == want, 'the FUSE mount sees other bytes: %s' % got
        print('roundtrip %s depth %d req %d: write %.1f MB/s, read %.1f '
              'MB/s, %.1f s in all' % (SHARE, depth, req, r['write_MBps'],
                                       r['read_MBps'], elapsed))
    finally:
        remove(stack, name)


def test_many_clients_no_lost_completion(stack, tmpname):
    clients = 16
    size = 64 * MiB
    depth = 8
    deadline_s = 600
    names = ['%s-c%02d' % (tmpname, i) for i in range(clients)]
    seeds = ['%s-%d' % (tmpname, i) for i in range(clients)]
    offsets = log_offsets(stack)
    procs = []
    try:
        t0 = time.time()
        for name, seed in zip(names, seeds):
            argv = smb2q_argv(stack, 'roundtrip', name, size, depth, MiB,
                              seed)
            procs.append((argv, subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                universal_newlines=True)))
        results = []
        hung = []
        for i, (argv, p) in enumerate(procs):
            left = max(1, t0 + deadline_s - time.time())
            try:
                out, err = p.communicate(timeout=left)
            except subprocess.TimeoutExpired:
                hung.append(names[i])
                continue
            results.append((argv, p.returncode, out, err))
        if hung:
            pytest.fail('%d of %d clients did not finish within %d s (a lost '
                        'completion?): %s' % (len(hung), clients, deadline_s,
                                               ', '.join(hung)))
        elapsed = time.time() - t0
        rs = [parse_result(*x) for x in results]
        for r in rs:
            served(r)
        for r, seed in zip(rs, seeds):
            print(json.dumps(r, sort_keys=True))
            assert r['max_outstanding_observed'] == depth
            want = pattern_sha256(seed, size)
            assert r['write_sha256'] == want
            assert r['read_sha256'] == want, \
                '%s: read back %s, wrote %s' % (r['file'], r['read_sha256'],
                                                want)
        for name, seed in zip(names[:2], seeds[:2]):
            assert fuse_sha256(stack, name) == (pattern_sha256(seed, size),
                                                size)
        print('%d clients x %d MiB round trip, depth %d on %s: %.1f s, '
              '%.1f MB/s aggregate' % (clients, size >> 20, depth, SHARE,
                                       elapsed,
                                       2 * clients * size / elapsed / 1e6))
        pids = {r['server_pid'] for r in rs if r['server_pid']}
        left = wait_smbd_exit(stack, pids)
        assert not left, 'smbd processes %s still running %d s after their ' \
            'clients left' % (sorted(left), SMBD_EXIT_TIMEOUT)
        assert not panics_since(stack, offsets, pids)
    finally:
        for _, p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        remove(stack, *names)


def test_disconnect_with_io_in_flight(stack, tmpname):
    name = tmpname + '-abandon'
    size = 256 * MiB
    depth = 64
    seed = uuid.uuid4().hex[:8]
    want = pattern_sha256(seed, size)
    bricks = list(brick_pids(stack).values())
    assert bricks, 'no brick of %s online' % stack['GLUSTER_VOLUME']
    parent = stack_smbd_parent(stack)
    try:
        r = run_smb2q(stack, 'write', name, size, 8, MiB, seed, timeout=300)
        assert r['sha256'] == want
        gfid = gfid_of(stack, name)
        writer = {r['server_pid']} if r['server_pid'] else set()
        wait_smbd_exit(stack, writer)
        baseline = {p: brick_file_fds(p) for p in bricks}
        offsets = log_offsets(stack)
        before = stack_smbd_children(stack)

        abandoned = []
        for _ in range(ABANDON_RUNS):
            r = run_smb2q(stack, 'abandon', name, size, depth, MiB, seed,
                          timeout=120)
            assert r['reads_in_flight'] == depth
            assert r['writes_in_flight'] == depth
            assert r['server_pid'], 'smb2q did not find the smbd serving it'
            assert r['server_ppid'] in (parent, None), \
                'connection served by pid %d, not a child of the stack ' \
                'smbd %d' % (r['server_pid'], parent)
            abandoned.append(r['server_pid'])

        # The smbd processes that served the abandoned connections exit.
        t0 = time.time()
        left = wait_smbd_exit(stack, abandoned)
        print('smbd processes of the abandoned connections gone %.1f s '
              'after the last reset' % (time.time() - t0))
        new = stack_smbd_children(stack) - before
        assert not left, \
            'smbd processes %s that served connections abandoned with I/O ' \
            'in flight still run %d s later (new children of the stack ' \
            'smbd: %s)' % (sorted(left), SMBD_EXIT_TIMEOUT, sorted(new))
        assert process_alive(parent), 'the stack smbd is gone'
        panics = panics_since(stack, offsets, set(abandoned))
        assert not panics, 'smbd crashed:\n' + '\n'.join(panics)

        # The bricks let go of the file and return to their baseline.
        deadline = time.time() + FD_SETTLE_TIMEOUT
        while True:
            on_file = fds_on(bricks, gfid, name)
            now = {p: brick_file_fds(p) for p in bricks}
            ok = not any(on_file.values()) and all(
                now[p] <= baseline[p] + FD_SLACK for p in bricks)
            if ok or time.time() > deadline:
                break
            time.sleep(1)
        assert not any(on_file.values()), \
            'bricks still hold descriptors on the file %d s after its ' \
            'connections were reset: %s' % (FD_SETTLE_TIMEOUT, on_file)
        for p in bricks:
            assert now[p] <= baseline[p] + FD_SLACK, \
                'brick %d: %d descriptors (not directories or sockets) ' \
                'before, %d after %d abandoned connections (%d in all)' % (
                    p, baseline[p], now[p], ABANDON_RUNS,
                    len(brick_fds(p)))

        # A new connection reads the file correctly (abandon's writes wrote
        # the same pattern).
        r = run_smb2q(stack, 'read', name, size, 8, MiB, seed, timeout=300)
        assert r['sha256'] == want
        assert fuse_sha256(stack, name) == (want, size)
    finally:
        remove(stack, name)


def test_smb2q_catches_bad_data_and_bad_arguments(stack, tmpname):
    """Control: smb2q fails (exit 1, offset named) when one byte of the
    file differs from the pattern, and exits 2 on bad arguments; the tests
    above can fail."""
    name = tmpname + '-control'
    size = 8 * MiB
    bad = 5 * MiB + 12345
    try:
        run_smb2q(stack, 'write', name, size, 4, MiB, 'control', timeout=120)
        with open(fuse_path(stack, name), 'r+b') as f:
            f.seek(bad)
            old = f.read(1)
            f.seek(bad)
            f.write(bytes([old[0] ^ 0xff]))
        time.sleep(1)   # past glusterfs2's prefetch max age (250 ms)
        argv = smb2q_argv(stack, 'read', name, size, 4, MiB, 'control')
        p = subprocess.run(argv, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True,
                           timeout=120)
        assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
        assert 'MISMATCH at offset %d ' % bad in p.stderr, p.stderr

        argv = smb2q_argv(stack, 'read', name, size, 0, MiB, 'control')
        p = subprocess.run(argv, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True,
                           timeout=60)
        assert p.returncode == 2 and '--depth' in p.stderr, p.stderr

        argv = smb2q_argv(stack, 'read', name + '-missing', size, 4, MiB,
                          'control')
        p = subprocess.run(argv, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True,
                           timeout=60)
        assert p.returncode == 1, p.stderr
        assert 'STATUS_OBJECT_NAME_NOT_FOUND' in p.stderr, p.stderr
    finally:
        remove(stack, name)


def test_zz_no_smbd_crashed(stack):
    """Last: every smbd process that served an smb2q run above has exited,
    and none of them logged a PANIC (a crash on the way out, with gfapi
    calls still in flight, included)."""
    if not SERVED:
        pytest.skip('no smb2q run in this session to check')
    pids = {p for p, _ in SERVED}
    left = wait_smbd_exit(stack, pids, timeout=60)
    what = dict(SERVED)
    assert not left, 'smbd processes still running 60 s after their ' \
        'clients left: %s' % ', '.join('%d (%s)' % (p, what[p])
                                       for p in sorted(left))
    panics = panics_since(stack, LOG_OFFSETS, pids)
    assert not panics, 'smbd crashed (%d processes served smb2q runs):\n%s' \
        % (len(pids), '\n'.join(
            '%s  [%s]' % (l, what.get(int(re.search(r'pid (\d+)', l)
                                          .group(1)), '?'))
            for l in panics))
