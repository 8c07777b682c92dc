"""A directory made unsearchable by another client is not walked again.

glusterfs2 asks Gluster whether the connected user may search each
directory of a path it looks up, and keeps the answers for at most
md-cache's default timeout (1 s); every announcement of a change that
Gluster sends (upcalls: cache invalidation) drops them all.  The
announcements waiting in the queue must be taken before a kept answer
is used: once another client has taken the search permission away and
the announcement has arrived, the next walk through the directory must
be refused, as on a local file system.

A private smbd (the stack's port plus its own offset) serves the stack's
volume with the upcall options of Gluster's `samba` group set for the
test.  One smbclient session as SMB_USER reads d/e/f, so its process
keeps "may search /, d and d/e"; then root makes d mode 0700 through the
FUSE mount, and the test waits ANNOUNCE_S for Gluster's announcement to
reach that process (it changes nothing there but the queue); then the
session's next look at d/e/f must answer ACCESS_DENIED.  smbd asks the
module for d/e in one lookup, whose first check is the kept answer for
d.  The wait stays well inside the answers' lifetime: if the machine is
so slow that they expired first, the walk asks Gluster and is refused
anyway, so the test cannot fail wrongly, only miss the case.
"""

import os
import time
import uuid

import pytest

from gf2_private_smbd import PrivateSmbd
from test_metadata_coherence import UPCALL_OPTIONS, gluster, Session

ANNOUNCE_S = 0.3        # Gluster sends its announcements at once


@pytest.fixture(scope='module')
def srv(stack):
    vol = stack['GLUSTER_VOLUME']
    for k, v in UPCALL_OPTIONS:
        gluster('volume', 'set', vol, k, v)
    s = PrivateSmbd('searchperm', stack)
    share = [('vfs objects', 'glusterfs2'), ('path', '/'),
             ('glusterfs2:volume', vol),
             ('glusterfs2:volfile_server', stack.get('GLUSTER_HOST',
                                                     'localhost')),
             ('glusterfs2:logfile', os.path.join(s.dir,
                                                 'glusterfs2-%M.log')),
             ('kernel share modes', 'no'), ('read only', 'no')]
    s.write_conf([], [('gf2coh', share)])
    try:
        s.start()
        yield s
    finally:
        s.stop()
        for k, _ in UPCALL_OPTIONS:
            gluster('volume', 'reset', vol, k)


def reached(out):
    # smbclient's allinfo of Samba 4.25 also asks for the file's previous
    # versions; a share without a snapshot module answers that query
    # NT_STATUS_INVALID_DEVICE_REQUEST, which says nothing of the walk
    out = '\n'.join(l for l in out.splitlines()
                    if 'getting shadow copy data' not in l)
    return 'NT_STATUS' not in out and 'write_time' in out


@pytest.mark.parametrize('rnd', range(3))
def test_unsearchable_after_other_client_chmod(srv, stack, rnd):
    d = 'sp-%s' % uuid.uuid4().hex[:10]
    top = os.path.join(stack['FUSE_MOUNT'], d)
    os.makedirs(os.path.join(top, 'e'))
    os.chmod(top, 0o755)
    os.chmod(os.path.join(top, 'e'), 0o755)
    f = os.path.join(top, 'e', 'f')
    with open(f, 'wb') as fh:
        fh.write(b'x' * 100)
    os.chmod(f, 0o644)
    root = stack['FUSE_MOUNT']
    root_mode = os.stat(root).st_mode & 0o7777
    sess = Session(srv)
    try:
        out = sess.cmd('allinfo %s\\e\\f' % d)
        assert reached(out), out
        out = sess.cmd('allinfo %s\\e\\f' % d)
        assert reached(out), out
        os.chmod(top, 0o700)
        time.sleep(ANNOUNCE_S)
        out = sess.cmd('allinfo %s\\e\\f' % d)
        assert 'NT_STATUS_ACCESS_DENIED' in out, \
            'd/e/f was reached through a directory the user may no ' \
            'longer search: %s' % out
        # searchable again: walked again
        os.chmod(top, 0o755)
        time.sleep(ANNOUNCE_S)
        out = sess.cmd('allinfo %s\\e\\f' % d)
        assert reached(out), out
        # the first directory of every walk, the share's root
        out = sess.cmd('allinfo %s\\e\\f' % d)
        assert reached(out), out
        os.chmod(root, 0o700)
        time.sleep(ANNOUNCE_S)
        out = sess.cmd('allinfo %s\\e\\f' % d)
        assert 'NT_STATUS_ACCESS_DENIED' in out, \
            'd/e/f was reached through a share root the user may no ' \
            'longer search: %s' % out
    finally:
        sess.p.kill()
        sess.p.wait()
        os.chmod(root, root_mode)
        os.chmod(top, 0o755)
        os.unlink(f)
        os.rmdir(os.path.join(top, 'e'))
        os.rmdir(top)
