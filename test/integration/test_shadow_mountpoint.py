"""shadow_copy2 over glusterfs2: the admin's `shadow:mountpoint` is used.

Gluster is not mounted where smbd runs, so shadow_copy2 cannot find the
mount point of a share's path by itself; glusterfs2 tells it "/" (the
volume's root) - but only when the admin set nothing.  A share whose path
is a subdirectory of the volume, with `shadow:mountpoint` set to that
subdirectory and a relative `shadow:snapdir`, keeps its snapshots in
SUBDIR/.snaps: a file's previous version there must be listed by
`allinfo` and readable through its @GMT path.  [snapdef], the same share
without `shadow:mountpoint`, looks in the volume root's .snaps, where a
different previous version is kept: the default still works.

A private smbd (the stack's port plus its own offset) serves both.
"""

import os
import shutil
import uuid

import pytest

from gf2_private_smbd import PrivateSmbd

SNAP = '@GMT-2020.01.01-00.00.00'


@pytest.fixture(scope='module')
def srv(stack):
    sub = 'shadowmp-' + uuid.uuid4().hex[:10]
    fuse = stack['FUSE_MOUNT']
    made = [os.path.join(fuse, sub), os.path.join(fuse, '.snaps', SNAP, sub)]
    os.makedirs(os.path.join(fuse, sub, '.snaps', SNAP))
    os.makedirs(made[1])
    for d, text in ((os.path.join(fuse, sub), 'current\n'),
                    (os.path.join(fuse, sub, '.snaps', SNAP), 'in sub\n'),
                    (made[1], 'in root\n')):
        with open(os.path.join(d, 'f.txt'), 'w') as f:
            f.write(text)
    for root, dirs, files in os.walk(os.path.join(fuse, sub)):
        for n in dirs + files:
            os.chmod(os.path.join(root, n), 0o777)
    os.chmod(os.path.join(fuse, sub), 0o777)

    s = PrivateSmbd('shadowmp', stack)
    g2 = s.gf2_share([('shadow:snapdir', '.snaps'),
                      ('shadow:format', '@GMT-%Y.%m.%d-%H.%M.%S')],
                     path='/' + sub, vfs='shadow_copy2 glusterfs2')
    s.write_conf([], [
        ('snapsub', g2 + [('shadow:mountpoint', '/' + sub)]),
        ('snapdef', g2)])
    s.start()
    try:
        yield s
    finally:
        s.stop()
        shutil.rmtree(made[0], ignore_errors=True)
        shutil.rmtree(os.path.join(fuse, '.snaps'), ignore_errors=True)


def previous(srv, share):
    """(snapshot names allinfo lists, the @GMT version's content)."""
    out = srv.smbclient(share, 'allinfo f.txt; get %s/f.txt /dev/stdout'
                        % SNAP).stdout
    snaps = sorted(set(l.split()[0] for l in out.splitlines()
                       if l.startswith('@GMT-')))
    return snaps, out


def test_admin_mountpoint_honoured(srv):
    snaps, out = previous(srv, 'snapsub')
    assert snaps == [SNAP], 'no previous version listed:\n' + out
    assert 'in sub' in out and 'in root' not in out, out


def test_default_mountpoint_is_volume_root(srv):
    snaps, out = previous(srv, 'snapdef')
    assert snaps == [SNAP], 'no previous version listed:\n' + out
    assert 'in root' in out and 'in sub' not in out, out
