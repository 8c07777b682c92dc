"""Shared fixtures for the end-to-end tests.

Every test talks to a real smbd through real clients (python3-smbc,
smbclient) on the local stack brought up by `test/stack up`; the stack's
interface is `test/stack env`.
"""

import hashlib
import json
import os
import subprocess
import sys
import uuid

import pytest
import smbc

from gf2_bricks import delayed_brick_fops, delayed_fops, one_brick_volume
from gf2_private_smbd import PrivateSmbd

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def _stack_env():
    p = subprocess.run([os.path.join(TOP, 'test', 'stack'), 'env'],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        pytest.exit('the stack is not up (test/stack up): ' +
                    p.stderr.strip(), returncode=2)
    env = {}
    for line in p.stdout.splitlines():
        if '=' in line:
            k, v = line.split('=', 1)
            env[k] = v.strip().strip('"').strip("'")
    return env


@pytest.fixture(scope='session')
def stack():
    env = _stack_env()
    # a stack whose smbd is a Samba installed under a prefix (test/stack up
    # --smbd-prefix DIR): the tools the tests run (smbcacls, smbstatus,
    # smbclient, smbd of the private smbds) are that Samba's
    prefix = env.get('SMBD_PREFIX')
    if prefix:
        os.environ['PATH'] = os.pathsep.join(
            [os.path.join(prefix, 'bin'), os.path.join(prefix, 'sbin'),
             os.environ.get('PATH', '')])
    return env


# Sanitizer mode (`test/stack up --asan`, `test/run-all --asan`): the
# stack's glusterfs2 shares and the tests' private smbds load the sanitizer
# build (VFS_MODULE: glusterfs2_asan, NAME_asan for GF2_STACK_MODULE=NAME).
# Tests that cannot run that way are deselected here, each with its reason,
# printed at the start and the end of the run; no other test is left out.
ASAN_DESELECT = {
    'test_write_spin.py': 'the socket transport is deliberately left bound '
    'as it is when malloc is interposed (AddressSanitizer refuses '
    'RTLD_DEEPBIND and a deep-bound library would not see its allocator; '
    'gf2_transport.c), so under ASan large writes still spin',
    'test_package.py': 'checks the Debian package: installs it with dpkg -i '
    '(in a mount namespace of its own) and asserts that smbd maps exactly '
    'the packaged glusterfs2.so; the sanitizer build is not what the '
    'package ships',
}
# Checks that run in sanitizer mode but are not asserted there, and why.
ASAN_RELAXED = {
    'test_soak.py::test_soak_short': 'RSS growth after warm-up is printed, '
    'not asserted: under ASan the RSS of an smbd is mostly the allocator\'s '
    'quarantine of freed memory (up to 256 MiB a process) and moves by '
    '+-30 MiB as it cycles; LeakSanitizer\'s exit-time reports are the '
    'leak check there.  Data, errors, crashes and operation counts are '
    'asserted as always',
}
_asan_deselected = []
_asan_relaxed = []


def _sanitizer_module():
    """The module the stack's shares load in sanitizer mode, else None."""
    p = subprocess.run([os.path.join(TOP, 'test', 'stack'), 'env'],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       universal_newlines=True)
    if p.returncode != 0:
        return None
    env = dict(l.split('=', 1) for l in p.stdout.splitlines() if '=' in l)
    if not env.get('SANITIZE', '').strip():
        return None
    return env.get('VFS_MODULE', '').strip('\'"') or 'glusterfs2_asan'


# CI (CI=true) runs a bounded set of the clustered-heads tests: every test
# of glusterfs2's own share with our lock helper, not the side-by-side runs
# of the same failover scenarios on the stock module's and the FUSE
# re-export's shares nor those with CTDB's fcntl lock helper (each scenario
# brings a node down and up again: a minute or more each).
# GF2_CLUSTER_FULL=1 runs them in CI too; test/run-all elsewhere always does.
CI_CLUSTER_REASON = ('CI runs the failover scenarios on glusterfs2\'s share '
                     'with our lock helper only (the stock module, the FUSE '
                     're-export and the fcntl lock side by side: '
                     'test/run-all outside CI, or GF2_CLUSTER_FULL=1)')
_ci_deselected = []


# CI also leaves out the runs that measure the stock module and assert
# nothing of glusterfs2 (printed for the record; test/run-all elsewhere
# runs them).  The stock module's controls, which show that a glusterfs2
# test can fail, stay in CI.
CI_MEASUREMENTS = {
    'test_faults.py::test_open_storm_stock_module_measurement':
        'the stock module\'s open storm, measured and printed, not asserted',
}


def _ci_bounded(item):
    if os.environ.get('CI') != 'true':
        return False
    if item.nodeid in CI_MEASUREMENTS:
        return True
    if os.environ.get('GF2_CLUSTER_FULL') == '1':
        return False
    if item.nodeid.split('::')[0].endswith('test_cluster_fcntl_lock.py'):
        return True
    if not item.nodeid.split('::')[0].endswith('test_cluster_failover.py'):
        return False
    params = getattr(getattr(item, 'callspec', None), 'params', {})
    return params.get('cl', 'glusterfs2') != 'glusterfs2'


# Above this many bytes, a failed == between two byte strings is explained
# by where they differ, not by pytest's own diff: that diff is quadratic
# and took longer than CI allows for two 512 KiB strings.
BYTES_DIFF_MAX = 4096


def pytest_assertrepr_compare(config, op, left, right):
    kinds = (bytes, bytearray, memoryview)
    if op != '==' or not isinstance(left, kinds) or \
            not isinstance(right, kinds):
        return None
    left, right = bytes(left), bytes(right)
    if max(len(left), len(right)) <= BYTES_DIFF_MAX:
        return None
    n = min(len(left), len(right))
    first = next((i for i in range(0, n, 65536)
                  if left[i:i + 65536] != right[i:i + 65536]), None)
    if first is not None:
        first += next(i for i in range(65536)
                      if left[first + i] != right[first + i])
    else:
        first = n
    return ['%d bytes == %d bytes' % (len(left), len(right)),
            'first difference at offset %d' % first,
            'left  at it: %r' % left[first:first + 32],
            'right at it: %r' % right[first:first + 32],
            'sha256 left %s, right %s' % (sha256(left), sha256(right))]


def pytest_collection_modifyitems(config, items):
    drop = [item for item in items if _ci_bounded(item)]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = [item for item in items if item not in drop]
        _ci_deselected.extend(item.nodeid for item in drop)
        tr = config.pluginmanager.get_plugin('terminalreporter')
        if tr:
            tr.write_line('CI: %d test(s) deselected (reasons in the '
                          'summary)' % len(drop))
    module = _sanitizer_module()
    if module is None:
        return
    keep, drop = [], []
    for item in items:
        if item.nodeid in ASAN_RELAXED:
            _asan_relaxed.append((item.nodeid, ASAN_RELAXED[item.nodeid]))
        reason = ASAN_DESELECT.get(item.nodeid.split('::')[0].split('/')[-1])
        (drop if reason else keep).append(item)
        if reason:
            _asan_deselected.append((item.nodeid, reason))
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    tr = config.pluginmanager.get_plugin('terminalreporter')
    if tr:
        tr.write_line('sanitizer mode (%s): %d test(s) deselected' %
                      (module, len(drop)))
        for nodeid, reason in _asan_deselected:
            tr.write_line('  deselected %s: %s' % (nodeid, reason))
        for nodeid, reason in _asan_relaxed:
            tr.write_line('  relaxed %s: %s' % (nodeid, reason))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Tell gf2_cluster, before a test's fixtures are torn down, whether
    the next test is one of a module that uses test/cluster too: the
    cluster test files then share one cluster instead of each bringing
    one up and taking it down (gf2_cluster.take_down)."""
    gc = sys.modules.get('gf2_cluster')
    if gc is not None:
        gc.next_test_uses_cluster = nextitem is not None and getattr(
            getattr(nextitem, 'module', None), 'gf2_cluster', None) is gc
    yield


def pytest_sessionfinish(session):
    """A run stopped early (-x, ^C) may have left the shared cluster up
    for a next test that never ran: take it down if this run brought it
    up (nothing when it is down already)."""
    gc = sys.modules.get('gf2_cluster')
    if gc is not None:
        gc.next_test_uses_cluster = False
        gc.take_down()


def pytest_terminal_summary(terminalreporter):
    if _ci_deselected:
        terminalreporter.write_sep('=', 'deselected in CI: %d' %
                                   len(_ci_deselected))
        for nodeid in _ci_deselected:
            terminalreporter.write_line('%s: %s' % (
                nodeid, CI_MEASUREMENTS.get(nodeid, CI_CLUSTER_REASON)))
    if _asan_relaxed:
        terminalreporter.write_sep('=', 'checks relaxed in sanitizer mode: '
                                   '%d' % len(_asan_relaxed))
        for nodeid, reason in _asan_relaxed:
            terminalreporter.write_line('%s: %s' % (nodeid, reason))
    if _asan_deselected:
        terminalreporter.write_sep('=', 'deselected in sanitizer mode: %d'
                                   % len(_asan_deselected))
        for nodeid, reason in _asan_deselected:
            terminalreporter.write_line('%s: %s' % (nodeid, reason))


class Smb:
    """A python3-smbc client bound to one share as one user."""

    def __init__(self, env, share, user=None, password=None):
        self.env = env
        self.share = share
        self.user = user or env['SMB_USER']
        self.password = password or env['SMB_PASS']
        self.ctx = smbc.Context(auth_fn=self._auth)
        self.base = 'smb://%s:%s/%s' % (env['SMB_HOST'], env['SMB_PORT'],
                                         share)

    def _auth(self, server, share, workgroup, username, password):
        return ('WORKGROUP', self.user, self.password)

    def url(self, path=''):
        return '%s/%s' % (self.base, path.lstrip('/'))

    def write(self, path, data):
        f = self.ctx.open(self.url(path), os.O_CREAT | os.O_WRONLY |
                          os.O_TRUNC, 0o644)
        view = memoryview(data)
        off = 0
        while off < len(data):
            n = f.write(view[off:off + (1 << 20)])
            assert n > 0
            off += n
        f.close()

    def read(self, path):
        f = self.ctx.open(self.url(path), os.O_RDONLY)
        chunks = []
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            chunks.append(b)
        f.close()
        return b''.join(chunks)

    def listdir(self, path=''):
        d = self.ctx.opendir(self.url(path))
        return sorted(e.name for e in d.getdents()
                      if e.name not in ('.', '..'))

    def mkdir(self, path):
        self.ctx.mkdir(self.url(path), 0o755)

    def rmdir(self, path):
        self.ctx.rmdir(self.url(path))

    def unlink(self, path):
        self.ctx.unlink(self.url(path))

    def rename(self, src, dst):
        self.ctx.rename(self.url(src), self.url(dst))

    def stat(self, path):
        return self.ctx.stat(self.url(path))

    def close(self):
        self.ctx = None


@pytest.fixture
def smb(stack):
    """Factory: smb(share, user=None, password=None) -> Smb."""
    clients = []

    def make(share, user=None, password=None):
        c = Smb(stack, share, user, password)
        clients.append(c)
        return c
    yield make
    for c in clients:
        c.close()


@pytest.fixture
def tmpname():
    """A unique name for a test's files in the share root."""
    return 'pytest-%s' % uuid.uuid4().hex[:12]


def fresh(stack, name):
    """No file name in the share root (removed through the FUSE mount)."""
    path = os.path.join(stack['FUSE_MOUNT'], name)
    if os.path.exists(path):
        os.unlink(path)


def lease_key():
    """A new SMB2 lease key."""
    return os.urandom(16)


STATS_TOOL = os.path.join(TOP, 'tools', 'glusterfs2-stats')


def share_counters(stack, share):
    """The counters of the stack's share (tools/glusterfs2-stats --json);
    {} before it has any."""
    p = subprocess.run([STATS_TOOL, '-s', stack['SMB_CONF'], '--share',
                        share, '--json'], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)['shares'].get(share, {})


def sha256(data):
    return hashlib.sha256(data).hexdigest()


# -- the bricks slowed down, a second volume -------------------------------

BRICK_FOP_DELAY = 1.5   # seconds every delayed brick read or write is held


@pytest.fixture(scope='class')
def slow_reads(stack):
    """Every READ held BRICK_FOP_DELAY s on the bricks (delay-gen)."""
    yield from delayed_fops(stack, 'read', BRICK_FOP_DELAY)


@pytest.fixture(scope='class')
def slow_writes(stack):
    """Every WRITE held BRICK_FOP_DELAY s on the bricks (delay-gen)."""
    yield from delayed_fops(stack, 'write', BRICK_FOP_DELAY)


# Every WRITE on the bricks waits this long under slow_bricks (delay-gen
# reads its settings when the brick starts, so they are fixed per module).
BRICK_DELAY_MS = 1500


@pytest.fixture(scope='module')
def slow_bricks(stack):
    """Every WRITE held BRICK_DELAY_MS on the bricks (delay-gen), the
    bricks restarted under the connected clients: yields the volume."""
    yield from delayed_brick_fops(stack, 'WRITE', BRICK_DELAY_MS)


READ_DELAY = 1.0        # seconds every READ is held under slow_reads_1s


@pytest.fixture(scope='module')
def slow_reads_1s(stack):
    """Every READ held READ_DELAY s on the bricks (delay-gen), for a whole
    module."""
    yield from delayed_fops(stack, 'READ', READ_DELAY)


@pytest.fixture(scope='module')
def second_volume(stack):
    """A one-brick volume of this stack's own (GLUSTER_VOLUME + 'x'),
    FUSE-mounted: (name, mount); removed afterwards."""
    yield from one_brick_volume(stack, 'x')


@pytest.fixture(scope='module')
def two_volume_smbd(stack, second_volume):
    """A private smbd serving [v1] on the stack's volume and [v2] on the
    second one; [v1long] on the stack's volume keeps prefetched data 60 s,
    [v1np] reads it without prefetch."""
    vol2, _mount2 = second_volume
    # the port: the stack's plus its offset (gf2_private_smbd.PORT_SLOTS)
    srv = PrivateSmbd('two-volumes', stack)
    srv.write_conf([], [
        ('v1', srv.gf2_share(logfile=None)),
        ('v2', srv.gf2_share(vol=vol2, logfile=None)),
        ('v1long', srv.gf2_share([('glusterfs2:prefetch max age', '60000')],
                                 logfile=None)),
        ('v1np', srv.gf2_share([('glusterfs2:prefetch', 'no')],
                               logfile=None))])
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()
