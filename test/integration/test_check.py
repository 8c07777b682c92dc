"""glusterfs2-check against the stack's glusterd, each misconfiguration
made on purpose.

The volume is the suite's own (the stack's volume + 'chk', replica 3,
bricks under STACK_DIR, Gluster's group samba applied), so that options
can be changed and a brick killed without touching the stack's volume;
smb.conf is a private file per case (testparm reads it, no smbd needed).
"""

import os
import shutil
import signal
import subprocess
import time
import xml.etree.ElementTree as ET

import pytest

from gf2_bricks import gluster

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
CHECK = os.path.join(TOP, 'tools', 'glusterfs2-check')


gl = gluster


def brick_pids(vol):
    out = gl('volume', 'status', vol, '--xml').stdout
    pids = {}
    for node in ET.fromstring(out).iter('node'):
        path = node.findtext('path') or ''
        if path.startswith('/') and node.findtext('status') == '1':
            pids[path] = int(node.findtext('pid'))
    return pids


def restart_bricks(vol, killed):
    """Start the volume's bricks that are down, and wait until all three
    run.  glusterd takes a brick whose pid file names a process that still
    exists for a running one ("discovered already-running brick"), and a
    killed brick stays a zombie until its parent, the machine's init,
    reaps it: on a busy machine that can outlast the first start, so the
    start is repeated until the killed process is gone and the brick up."""
    deadline = time.time() + 90
    while time.time() < deadline:
        gl('volume', 'start', vol, 'force', check=False)
        if len(brick_pids(vol)) == 3:
            return
        time.sleep(2)
    raise AssertionError('brick of %s not back within 90 s (killed pid %d '
                         '%s)' % (vol, killed, 'gone' if not os.path.exists(
                             '/proc/%d' % killed) else 'still there'))


@pytest.fixture(scope='module')
def vol(stack):
    name = stack['GLUSTER_VOLUME'] + 'chk'
    root = os.path.join(stack['STACK_DIR'], 'bricks', name)
    host = stack['GLUSTER_HOST']

    def remove():
        info = gl('volume', 'info', name, check=False)
        if info.returncode == 0:
            assert root in info.stdout, \
                'volume %s has bricks outside %s' % (name, root)
            gl('volume', 'stop', name, 'force', check=False)
            gl('volume', 'delete', name, check=False)
        shutil.rmtree(root, ignore_errors=True)

    remove()
    bricks = [os.path.join(root, 'b%d' % i) for i in (1, 2, 3)]
    for b in bricks:
        os.makedirs(b)
    gl('volume', 'create', name, 'replica', '3',
       *['%s:%s' % (host, b) for b in bricks], 'force')
    gl('volume', 'set', name, 'group', 'samba')
    gl('volume', 'start', name)
    yield name
    remove()


def conf(stack, tmp_path, vol, share_extra='', global_extra='',
         servers=None):
    d = str(tmp_path)
    for sub in ('lock', 'state', 'private'):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    text = """[global]
    lock directory = {d}/lock
    state directory = {d}/state
    private dir = {d}/private
    kernel share modes = no
    kernel oplocks = no
{g}
[chk]
    path = /
    vfs objects = {mod}
    glusterfs2:volume = {vol}
    glusterfs2:volfile_server = {servers}
    read only = no
{s}
""".format(d=d, g=global_extra, mod=stack['VFS_MODULE'], vol=vol,
           servers=servers or stack['GLUSTER_HOST'], s=share_extra)
    path = os.path.join(d, 'smb.conf')
    with open(path, 'w') as f:
        f.write(text)
    return path


def check(path, *args):
    p = subprocess.run([CHECK, '-s', path] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=120)
    print(p.stdout, p.stderr)
    lines = p.stdout.splitlines()
    assert lines and lines[-1].startswith('glusterfs2-check: '), p.stdout
    return p.returncode, lines[:-1], p


def one_finding(lines, level, *words):
    assert len(lines) == 1, lines
    assert lines[0].startswith(level + ': [chk] '), lines
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert '; fix: ' in lines[0]
    return lines[0]


def test_clean(stack, tmp_path, vol):
    rc, lines, p = check(conf(stack, tmp_path, vol))
    assert (rc, lines) == (0, [])
    assert 'through gluster CLI: 0 error(s), 0 warning(s)' in p.stdout


def test_kernel_share_modes(stack, tmp_path, vol):
    rc, lines, _ = check(conf(stack, tmp_path, vol,
                              share_extra='    kernel share modes = yes'))
    assert rc == 2
    one_finding(lines, 'error', 'kernel share modes = Yes',
                'fix: kernel share modes = no')


def test_not_last(stack, tmp_path, vol):
    mod = stack['VFS_MODULE']
    path = conf(stack, tmp_path, vol)
    with open(path) as f:
        text = f.read()
    with open(path, 'w') as f:
        f.write(text.replace('vfs objects = %s' % mod,
                             'vfs objects = %s streams_xattr' % mod))
    rc, lines, _ = check(path)
    assert rc == 2
    one_finding(lines, 'error', 'not last in vfs objects',
                'fix: vfs objects = streams_xattr %s' % mod)


def test_servers(stack, tmp_path, vol):
    rc, lines, _ = check(conf(stack, tmp_path, vol,
                              servers='127.0.0.1:1'))
    assert rc == 2
    one_finding(lines, 'error', 'no volfile server', '127.0.0.1:1')
    rc, lines, _ = check(conf(stack, tmp_path, vol, servers='%s 127.0.0.1:1'
                              % stack['GLUSTER_HOST']))
    assert rc == 1
    one_finding(lines, 'warning', '127.0.0.1 unreachable')


def test_group_samba(stack, tmp_path, vol):
    gl('volume', 'set', vol, 'performance.nl-cache', 'off')
    try:
        rc, lines, _ = check(conf(stack, tmp_path, vol))
    finally:
        gl('volume', 'set', vol, 'performance.nl-cache', 'on')
    assert rc == 1
    line = one_finding(lines, 'warning', 'option group for SMB',
                       'gluster volume set %s group samba' % vol)
    assert '(performance.nl-cache)' in line


def test_data_losing_settings(stack, tmp_path, vol):
    gl('volume', 'set', vol, 'cluster.quorum-type', 'none')
    try:
        rc, lines, _ = check(conf(stack, tmp_path, vol))
    finally:
        gl('volume', 'reset', vol, 'cluster.quorum-type')
    assert rc == 2
    one_finding(lines, 'error', 'quorum-type none',
                'cluster.quorum-type auto')
    gl('volume', 'set', vol, 'cluster.ensure-durability', 'off')
    try:
        rc, lines, _ = check(conf(stack, tmp_path, vol))
    finally:
        gl('volume', 'reset', vol, 'cluster.ensure-durability')
    assert rc == 2
    one_finding(lines, 'error', 'ensure-durability off')


def test_profiling(stack, tmp_path, vol):
    gl('volume', 'profile', vol, 'start')
    try:
        rc, lines, _ = check(conf(stack, tmp_path, vol))
    finally:
        gl('volume', 'profile', vol, 'stop')
    assert rc == 1
    one_finding(lines, 'warning', 'profiling',
                'gluster volume profile %s stop' % vol)


def test_brick_down(stack, tmp_path, vol):
    pids = brick_pids(vol)
    assert len(pids) == 3
    path, pid = sorted(pids.items())[0]
    os.kill(pid, signal.SIGKILL)
    deadline = time.time() + 30
    while len(brick_pids(vol)) == 3 and time.time() < deadline:
        time.sleep(0.5)
    try:
        rc, lines, _ = check(conf(stack, tmp_path, vol))
    finally:
        restart_bricks(vol, pid)
    assert rc == 2
    one_finding(lines, 'error', 'brick', path, 'is down',
                'gluster volume start %s force' % vol)
    rc, lines, _ = check(conf(stack, tmp_path, vol))
    assert (rc, lines) == (0, [])


def test_memory_budget(stack, tmp_path, vol):
    with open('/proc/meminfo') as f:
        total = int(f.readline().split()[1]) * 1024
    # 1 GiB a connection: one connection more than half the memory holds
    conns = total // 2 // (1 << 30) + 1
    rc, lines, _ = check(conf(
        stack, tmp_path, vol,
        share_extra='    glusterfs2:prefetch max memory = 1G',
        global_extra='    max connections = %d' % conns))
    assert rc == 1
    one_finding(lines, 'warning', 'prefetch max memory 1024 MiB',
                '%d connection(s) (max connections)' % conns,
                'max connections to %d' % (conns - 1))
    rc, lines, _ = check(conf(
        stack, tmp_path, vol,
        share_extra='    glusterfs2:prefetch max memory = 1G',
        global_extra='    max connections = %d' % (conns - 1)))
    assert (rc, lines) == (0, [])


def test_share_named_and_gfapi(stack, tmp_path, vol):
    path = conf(stack, tmp_path, vol)
    rc, _, p = check(path, 'chk')
    assert rc == 0
    p = subprocess.run([CHECK, '-s', path, 'nosuch'],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    assert p.returncode == 3
    assert '[nosuch] is no glusterfs2 share' in p.stderr
    rc, lines, p = check(path, '--no-cli')
    assert (rc, lines) == (0, [])
    assert 'through libgfapi' in p.stdout
    # the client volfile shows the group's client-side options
    gl('volume', 'set', vol, 'performance.nl-cache', 'off')
    try:
        rc, lines, _ = check(path, '--no-cli')
    finally:
        gl('volume', 'set', vol, 'performance.nl-cache', 'on')
    assert rc == 1
    line = one_finding(lines, 'warning', 'option group for SMB',
                       'gluster volume set %s group samba' % vol)
    assert '(performance.nl-cache)' in line
    rc, lines, p = check(conf(stack, tmp_path, vol + 'missing'), '--no-cli')
    assert rc == 2
    one_finding(lines, 'error', 'libgfapi cannot mount it')
