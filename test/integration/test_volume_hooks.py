"""Gluster's volume hooks with glusterfs2's (tools/glusterfs2-hook), run
by the real glusterd.

Gluster's hooks and ours write the smb.conf that smbd -b names
(/etc/samba/smb.conf), fixed: the test saves it, writes its own for the
run and puts the original back byte for byte at the end, and removes the
hook files it installed (none of the stacks reads that smb.conf: each
has its own under .stack/).  The volume is the suite's own (the stack's
volume + 'hook'); no other volume has user.smb set, so neither Gluster's
hooks nor ours act for any other volume meanwhile.  The share the hooks
write is served by a private smbd (its section copied into that smbd's
smb.conf) and checked with a round trip, and on the brick.
"""

import hashlib
import os
import shutil
import subprocess
import time
import uuid

import pytest

from gf2_bricks import gluster

from conftest import TOP
from gf2_private_smbd import PrivateSmbd, parse_smb_conf

HOOK = os.path.join(TOP, 'tools', 'glusterfs2-hook')
HOOKS = '/var/lib/glusterd/hooks/1'
INSTALL = {'start/post': 'S29glusterfs2-start.sh',
           'stop/pre': 'S29glusterfs2-stop.sh',
           'set/post': 'S29glusterfs2-set.sh'}
MiB = 1 << 20


gl = gluster


def hooks_running(vol):
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as f:
                cmd = f.read().decode(errors='replace')
        except OSError:
            continue
        if HOOKS + '/' in cmd and '--volname=%s\0' % vol in cmd:
            return True
    return False


def settle(vol, quiet=1.5, timeout=60):
    """glusterd runs post hooks in a thread of their own after the
    command returned, one after another: wait until none of this
    volume's has run for `quiet` seconds, so that the next command's
    hooks do not overtake them."""
    deadline = time.time() + timeout
    last = time.time()
    while time.time() - last < quiet:
        if hooks_running(vol):
            last = time.time()
        assert time.time() < deadline, 'hooks of %s still running' % vol
        time.sleep(0.1)


def glv(vol, *args):
    """A volume command, then its hooks settled."""
    p = gl(*args)
    settle(vol)
    return p


def smb_conf_path():
    out = subprocess.run(['smbd', '-b'], stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    return [l.split()[1] for l in out.splitlines()
            if l.strip().startswith('CONFIGFILE:')][0]


CONF = smb_conf_path()
BASE = """[global]
    workgroup = WORKGROUP
    server role = standalone server
    kernel share modes = no
    kernel oplocks = no
%s
"""


def write_conf(extra):
    with open(CONF, 'w') as f:
        f.write(BASE % extra)


def sections(vol):
    return [(n, dict(i)) for n, i in parse_smb_conf(CONF)
            if n == 'gluster-%s' % vol]


def wait_sections(vol, want, timeout=30):
    """Post hooks run in glusterd's hook thread after the command
    returns."""
    deadline = time.time() + timeout
    while True:
        s = sections(vol)
        if len(s) == want or time.time() > deadline:
            return s
        time.sleep(0.3)


@pytest.fixture(scope='module')
def hooks(stack):
    saved = open(CONF, 'rb').read()
    mode = os.stat(CONF).st_mode
    installed = []
    name = stack['GLUSTER_VOLUME'] + 'hook'
    root = os.path.join(stack['STACK_DIR'], 'bricks', name)

    def remove_volume():
        info = gl('volume', 'info', name, check=False)
        if info.returncode == 0:
            assert root in info.stdout
            gl('volume', 'stop', name, 'force', check=False)
            gl('volume', 'delete', name, check=False)
        shutil.rmtree(root, ignore_errors=True)

    try:
        for d, n in INSTALL.items():
            path = os.path.join(HOOKS, d, n)
            assert not os.path.exists(path), \
                '%s is installed already (the package?)' % path
            shutil.copy(HOOK, path)
            os.chmod(path, 0o755)
            installed.append(path)
        remove_volume()
        brick = os.path.join(root, 'b1')
        os.makedirs(brick)
        gl('volume', 'create', name,
           '%s:%s' % (stack['GLUSTER_HOST'], brick), 'force')
        gl('volume', 'set', name, 'server.allow-insecure', 'on')
        os.chmod(brick, 0o1777)        # the test user writes at the root
        yield name, brick
    finally:
        remove_volume()
        for path in installed:
            os.unlink(path)
        with open(CONF, 'wb') as f:
            f.write(saved)
        os.chmod(CONF, mode)
    assert open(CONF, 'rb').read() == saved


@pytest.fixture(autouse=True)
def stopped_after(hooks):
    """Each test starts the volume and stops it at its end: one that
    failed half way leaves it stopped for the next all the same."""
    yield
    vol, _ = hooks
    if 'Status: Started' in gl('volume', 'info', vol, check=False).stdout:
        glv(vol, 'volume', 'stop', vol, 'force')


def test_opted_in_start_serve_stop(stack, hooks, tmp_path):
    vol, brick = hooks
    write_conf('    glusterfs2:volume hooks = yes')
    glv(vol, 'volume', 'set', vol, 'user.smb', 'enable')
    glv(vol, 'volume', 'start', vol)
    s = wait_sections(vol, 1)
    assert len(s) == 1, open(CONF).read()
    share = s[0][1]
    assert share['vfs objects'] == 'glusterfs2', open(CONF).read()
    assert share['glusterfs2:volume'] == vol
    assert share.get('glusterfs2:volfile_server') == stack['GLUSTER_HOST'], \
        open(CONF).read()
    assert share['kernel share modes'] == 'no'
    assert share['path'] == '/'
    # Gluster's S30samba-start.sh ran after ours and wrote nothing
    time.sleep(2)
    text = open(CONF).read()
    assert text.count('[gluster-%s]' % vol) == 1, text
    assert 'glusterfs:volume' not in text, text
    p = subprocess.run(['testparm', '-s', CONF], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    assert p.returncode == 0, p.stdout
    # glusterfs2-check finds nothing wrong with the share itself, only
    # that this volume lacks Gluster's option group for SMB
    p = subprocess.run([os.path.join(TOP, 'tools', 'glusterfs2-check'),
                        'gluster-%s' % vol], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    lines = p.stdout.splitlines()
    assert p.returncode == 1, p.stdout
    assert len(lines) == 2 and 'group samba' in lines[0], p.stdout

    # served through glusterfs2: a round trip, and the file on the brick
    srv = PrivateSmbd('hooks', stack)
    items = srv.adapt_share(list(share.items()))
    items = [(k, v) for k, v in items if k != 'glusterfs2:volume'] + \
        [('glusterfs2:volume', vol)]
    srv.write_conf([], [('gluster-%s' % vol, items)])
    data = os.urandom(8 * MiB + 123)
    src = tmp_path / 'src'
    src.write_bytes(data)
    back = tmp_path / 'back'
    name = 'pytest-hook-%s' % uuid.uuid4().hex[:10]
    srv.start()
    try:
        p = srv.smbclient('gluster-%s' % vol, 'put %s %s; get %s %s' % (
            src, name, name, back))
        assert p.returncode == 0, p.stdout + srv.logs()
    finally:
        srv.stop()
    srv.check_read_back(back, data, p.stdout, os.path.join(brick, name))
    with open(os.path.join(brick, name), 'rb') as f:
        assert hashlib.sha256(f.read()).digest() == \
            hashlib.sha256(data).digest()
    os.unlink(os.path.join(brick, name))

    # user.smb disabled while started: gone; enabled again: back
    glv(vol, 'volume', 'set', vol, 'user.smb', 'disable')
    assert wait_sections(vol, 0) == []
    glv(vol, 'volume', 'set', vol, 'user.smb', 'enable')
    assert len(wait_sections(vol, 1)) == 1

    # stop: gone, and Gluster's stop hook marked nothing unavailable
    glv(vol, 'volume', 'stop', vol)
    assert sections(vol) == []
    assert 'available = no' not in open(CONF).read()


def test_not_opted_in_leaves_gluster_hooks_alone(stack, hooks):
    vol, _ = hooks
    write_conf('')
    glv(vol, 'volume', 'set', vol, 'user.smb', 'enable')
    glv(vol, 'volume', 'start', vol)
    try:
        s = wait_sections(vol, 1)
        assert len(s) == 1, open(CONF).read()
        # Gluster's own share, with the stock module
        assert s[0][1]['vfs objects'] == 'glusterfs'
        assert "glusterfs2's volume hook" not in open(CONF).read()
    finally:
        glv(vol, 'volume', 'stop', vol)
    # our stop hook leaves a section it did not write
    s = sections(vol)
    assert len(s) == 1 and s[0][1]['vfs objects'] == 'glusterfs'


def test_clustered_and_admin_share(stack, hooks):
    """clustering = yes as S29CTDBsetup.sh leaves smb.conf: the same
    share; and a [gluster-VOL] an admin wrote is neither doubled nor
    removed."""
    vol, _ = hooks
    write_conf('    clustering = yes\n    glusterfs2:volume hooks = yes')
    glv(vol, 'volume', 'set', vol, 'user.smb', 'enable')
    glv(vol, 'volume', 'start', vol)
    try:
        s = wait_sections(vol, 1)
        assert len(s) == 1 and s[0][1]['vfs objects'] == 'glusterfs2'
        p = subprocess.run(['testparm', '-s', CONF], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True)
        assert p.returncode == 0, p.stdout
        assert 'clustering = Yes' in p.stdout
    finally:
        glv(vol, 'volume', 'stop', vol)
    assert sections(vol) == []

    admin = '[gluster-%s]\n    path = /admin\n    vfs objects = glusterfs2\n' \
        '    glusterfs2:volume = %s\n' % (vol, vol)
    write_conf('    glusterfs2:volume hooks = yes\n\n' + admin)
    glv(vol, 'volume', 'start', vol)
    try:
        time.sleep(3)
        s = sections(vol)
        assert len(s) == 1 and s[0][1]['path'] == '/admin', \
            open(CONF).read()
    finally:
        glv(vol, 'volume', 'stop', vol)
    s = sections(vol)
    assert len(s) == 1 and s[0][1]['path'] == '/admin'
