"""A volume with Gluster's samba option group: what one SMB session
makes, it can use.

`gluster volume set VOL group samba` (docs/admin.md recommends it for
every volume served over SMB) turns on, among others, nl-cache, which
answers lookups of names it has seen created or found missing from the
client's own memory.  gfapi's glfs_h_close() resets the inode's lookup
count; on an entry this client created, nl-cache then answers ENOENT to
every later lookup of the name, in this process, for the cache's timeout
(600 s in the group).  The module once closed such handles after a
change through a path-only or directory handle (DOS attributes, times)
and after every O_NOFOLLOW open, so that in one SMB session:

- a directory made and then given its DOS attributes could not be
  entered (`mkdir d` then `cd d`: NT_STATUS_OBJECT_NAME_NOT_FOUND), and
- a file written and then read back could no longer be opened, listed
  by name or deleted.

gfapi itself closes such a handle for every upcall it delivers (the
module takes upcalls to keep its caches coherent): once another client
changed a file or directory the session had made, the session could no
longer find it.  The module bypasses nl-cache in its own client graph.

Each test runs its steps in one smbclient session (one smbd process, one
gfapi instance), on a one-brick volume of its own with the group applied,
and checks what the SMB session sees and what the FUSE mount holds.
"""

import hashlib
import os
import subprocess

import pytest

from gf2_bricks import gluster, one_brick_volume
from gf2_private_smbd import PrivateSmbd, private_port

SIZE = 200 * 1024


@pytest.fixture(scope='module')
def group_volume(stack):
    """(name, FUSE mount) of a one-brick volume with `group samba`."""
    gen = one_brick_volume(stack, '-sgrp')
    vol, mount = next(gen)
    try:
        gluster('volume', 'set', vol, 'group', 'samba')
        yield vol, mount
    finally:
        gen.close()


@pytest.fixture(scope='module')
def srv(stack, group_volume):
    # the port of test_symlink_swap.py's smbd: never up at the same time
    s = PrivateSmbd('sambagroup', stack,
                    port=private_port(stack, 'symlinkswap'))
    s.write_conf([], [('grp', s.gf2_share(vol=group_volume[0]))])
    s.start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def src(tmp_path):
    data = os.urandom(SIZE)
    path = tmp_path / 'src'
    path.write_bytes(data)
    return str(path), hashlib.sha256(data).hexdigest()


def sha(path):
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


def session(srv, cmds):
    """Run cmds (a list) in one smbclient session, in order (`!cmd` runs a
    local command at that point); its output."""
    r = subprocess.run(
        ['smbclient', '-p', str(srv.port), '//127.0.0.1/grp', '-U',
         '%s%%%s' % (srv.env['SMB_USER'], srv.env['SMB_PASS'])],
        input='\n'.join(cmds + ['quit']) + '\n', stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, universal_newlines=True, errors='replace',
        timeout=300)
    return r.stdout


def fresh_name(mount, stem):
    name = '%s-%d' % (stem, os.getpid())
    subprocess.run(['rm', '-rf', os.path.join(mount, name)], check=True)
    return name


def test_new_directory_can_be_entered(srv, group_volume, src):
    mount = group_volume[1]
    d = fresh_name(mount, 'dir')
    out = session(srv, ['mkdir %s' % d, 'cd %s' % d,
                        'put %s f' % src[0], 'ls'])
    assert 'NT_STATUS_' not in out, out
    assert ' f ' in out, 'the new file is not listed:\n' + out
    assert sha(os.path.join(mount, d, 'f')) == src[1]


def test_new_directory_with_attributes_can_be_entered(srv, group_volume,
                                                       src):
    mount = group_volume[1]
    d = fresh_name(mount, 'hdir')
    out = session(srv, ['mkdir %s' % d, 'setmode %s +h' % d,
                        'cd %s' % d, 'put %s f' % src[0], 'ls'])
    assert 'NT_STATUS_' not in out, out
    assert sha(os.path.join(mount, d, 'f')) == src[1]


def test_new_file_read_back_and_deleted(srv, group_volume, src, tmp_path):
    mount = group_volume[1]
    f = fresh_name(mount, 'file')
    got1, got2 = str(tmp_path / 'got1'), str(tmp_path / 'got2')
    out = session(srv, ['put %s %s' % (src[0], f), 'get %s %s' % (f, got1),
                        'get %s %s' % (f, got2), 'allinfo %s' % f,
                        'del %s' % f])
    assert 'NT_STATUS_' not in out, out
    assert sha(got1) == src[1]
    assert sha(got2) == src[1]
    assert not os.path.exists(os.path.join(mount, f)), \
        'the delete did not reach the volume:\n' + out


def test_new_file_changed_elsewhere_stays_visible(srv, group_volume, src,
                                                  tmp_path):
    """Another client's change to a file this session created (an upcall
    to this smbd) leaves the file visible to the session."""
    mount = group_volume[1]
    f = fresh_name(mount, 'up')
    got = str(tmp_path / 'got')
    out = session(srv, ['put %s %s' % (src[0], f),
                        '!touch %s' % os.path.join(mount, f),
                        '!sleep 2', 'get %s %s' % (f, got), 'ls %s' % f])
    assert 'NT_STATUS_' not in out, out
    assert sha(got) == src[1]


def test_new_directory_changed_elsewhere_stays_visible(srv, group_volume,
                                                       src):
    mount = group_volume[1]
    d = fresh_name(mount, 'updir')
    out = session(srv, ['mkdir %s' % d,
                        '!touch %s' % os.path.join(mount, d),
                        '!sleep 2', 'cd %s' % d, 'put %s f' % src[0],
                        'ls'])
    assert 'NT_STATUS_' not in out, out
    assert sha(os.path.join(mount, d, 'f')) == src[1]
