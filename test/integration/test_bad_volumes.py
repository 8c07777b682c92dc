"""Bad volumes, unreachable servers and bad options fail the tree connect
with one log line naming what is wrong; smbd keeps serving its other
shares; a volume that appears later is served on the next connect."""

import os
import shutil
import socket
import subprocess
import time

import pytest
import smbc

from conftest import Smb
from gf2_logs import lines_since, logs


def _connect_fails(stack, share):
    """smbd refuses a tree connect whose VFS connect fails with
    NT_STATUS_UNSUCCESSFUL (libsmbclient: EINVAL)."""
    p = subprocess.run(
        ['smbclient', '-p', stack['SMB_PORT'],
         '//%s/%s' % (stack['SMB_HOST'], share),
         '-U', '%s%%%s' % (stack['SMB_USER'], stack['SMB_PASS']),
         '-c', 'ls'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        universal_newlines=True, timeout=120)
    assert p.returncode != 0
    assert 'tree connect failed: NT_STATUS_UNSUCCESSFUL' in p.stdout, \
        p.stdout
    c = Smb(stack, share)
    with pytest.raises(ValueError):
        c.listdir('')


def late_volume(stack):
    """The volume [gf2-novolume] names, which does not exist until
    test_unknown_volume_then_created creates it: the stack's own (its
    volume's name + "late", test/lib/stack/smbconf.sh), so that stacks
    side by side never share it."""
    return stack['GLUSTER_VOLUME'] + 'late'


def test_unknown_volume_then_created(stack, tmp_path):
    late = late_volume(stack)
    offsets = logs(stack)
    _connect_fails(stack, 'gf2-novolume')
    assert any('volume %s unavailable from volfile servers' % late in line
               for line in lines_since(stack, late, offsets)), \
        'no log line naming volume and servers'

    # the other shares keep working
    assert isinstance(Smb(stack, 'glusterfs2').listdir(''), list)

    # the volume appears: the next connect succeeds
    brick = os.path.join(stack['STACK_DIR'], 'bricks', late, 'b1')
    shutil.rmtree(os.path.dirname(brick), ignore_errors=True)
    os.makedirs(brick)
    host = socket.gethostname()
    g = ['gluster', '--mode=script']
    try:
        subprocess.run(g + ['volume', 'create', late,
                            '%s:%s' % (host, brick), 'force'], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run(g + ['volume', 'set', late,
                            'server.allow-insecure', 'on'], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run(g + ['volume', 'start', late], check=True,
                       stdout=subprocess.DEVNULL)
        os.chmod(brick, 0o1777)
        deadline = time.time() + 30
        while True:
            try:
                c = Smb(stack, 'gf2-novolume')
                c.write('late.txt', b'late')
                assert c.read('late.txt') == b'late'
                c.unlink('late.txt')
                break
            except ValueError:
                if time.time() > deadline:
                    raise
                time.sleep(1)
    finally:
        subprocess.run(g + ['volume', 'stop', late, 'force'],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        subprocess.run(g + ['volume', 'delete', late],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(os.path.dirname(brick), ignore_errors=True)


def test_unreachable_server(stack):
    offsets = logs(stack)
    t0 = time.time()
    _connect_fails(stack, 'gf2-noserver')
    assert time.time() - t0 < 30
    assert any('unavailable from volfile servers tcp+127.0.0.1:9' in line
               for line in lines_since(stack, '127.0.0.1:9', offsets))
    assert isinstance(Smb(stack, 'glusterfs2').listdir(''), list)


def test_bad_volfile_server_option(stack):
    offsets = logs(stack)
    _connect_fails(stack, 'gf2-badoption')
    assert any("unknown transport 'foo'" in line
               for line in lines_since(stack, 'gf2-badoption', offsets))
    assert isinstance(Smb(stack, 'glusterfs2').listdir(''), list)
