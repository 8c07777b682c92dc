"""A user walks only through directories it may search.

glusterfs2 asks Gluster whether the connected user may search each
directory of a path it looks up (access X_OK), keeps the answers per
identity for at most md-cache's default timeout (1 s), and drops them
all on every announcement of a change that Gluster sends (upcalls: cache
invalidation).  The tests:

  - two users on one connection (one smbd process, one metadata cache):
    what the first was allowed to look up is not served to the second,
    with md-cache on or off; a POSIX ACL entry that refuses the second
    user is obeyed as on the local share; a permission taken away by
    another client is seen within the 1 s bound (raw SMB2 sessions,
    gf2_smb2, on the stack's smbd);
  - with upcalls, the announcements waiting in the queue are taken
    before a kept answer is used: once another client has taken the
    search permission away and the announcement has arrived, the next
    walk through the directory is refused, as on a local file system.

The upcall case: a private smbd (the stack's port plus its own offset)
serves the stack's volume with the upcall options of Gluster's `samba`
group set for the test.  One smbclient session as SMB_USER reads d/e/f,
so its process keeps "may search /, d and d/e"; then root makes d mode
0700 through the FUSE mount, and the test waits ANNOUNCE_S for Gluster's
announcement to reach that process (it changes nothing there but the
queue); then the session's next look at d/e/f must answer ACCESS_DENIED.
smbd asks the module for d/e in one lookup, whose first check is the
kept answer for d.  The wait stays well inside the answers' lifetime: if
the machine is so slow that they expired first, the walk asks Gluster
and is refused anyway, so the test cannot fail wrongly, only miss the
case.  Those tests come last: the private smbd's module-scoped fixture
keeps the upcall options set on the volume until the module ends.
"""

import os
import shutil
import subprocess
import time
import uuid

import pytest

from gf2_bricks import UPCALL_OPTIONS, gluster, gluster_reset, gluster_set
from gf2_private_smbd import PrivateSmbd
from gf2_smb2 import (STATUS_ACCESS_DENIED, connect, ea_sizes, end_of_file,
                      eof_as, second_login, smb2q)
from gf2_smbclient import Session

ANNOUNCE_S = 0.3        # Gluster sends its announcements at once



# -- two users on the stack's smbd ------------------------------------

@pytest.fixture
def stat_prefetch(stack, request):
    vol = stack['GLUSTER_VOLUME']
    if request.param == 'off':
        gluster_set(vol, 'performance.stat-prefetch', 'off')
        time.sleep(2)
    try:
        yield request.param
    finally:
        if request.param == 'off':
            gluster_reset(vol, 'performance.stat-prefetch')
            time.sleep(1)


@pytest.mark.parametrize('stat_prefetch', ['off', 'on'], indirect=True)
def test_kept_lookup_not_served_to_another_user(stack, tmpname,
                                                stat_prefetch):
    """Two users on one connection (one smbd process, one metadata
    cache).  A directory only the first may traverse (0700, its own)
    holds a file.  The first lists the share's root and the directory,
    which keeps their entries' stats; the second then opens the file for
    its attributes: Gluster refuses it the lookup inside the directory,
    so must the module.  Before the fix the kept stat answered the
    lookup whoever asked, and the second user got the file's size (with
    md-cache off, so that only the module's cache is under test).  With
    md-cache on (Gluster's default), gfapi itself answered: it resolves
    the directory from its inode table and md-cache serves the file's
    lookup from the first user's listing, so no brick checked the
    directory; the module now asks Gluster whether the caller may search
    each directory of a path (access X_OK, kept per identity) before a
    lookup, as a local file system checks each directory it walks."""
    d = os.path.join(stack['FUSE_MOUNT'], tmpname)
    os.mkdir(d)
    f = os.path.join(d, 'f')
    with open(f, 'wb') as fh:
        fh.write(b's' * 123)
    os.chmod(f, 0o644)
    shutil.chown(f, stack['SMB_USER'])
    os.chmod(d, 0o700)
    shutil.chown(d, stack['SMB_USER'])
    conn = connect(stack, 'glusterfs2')
    path = tmpname + '\\f'
    try:
        tid1 = conn.tid
        s2, tid2 = second_login(conn, stack['SMB_USER2'],
                                  stack['SMB_PASS2'], 'glusterfs2')

        def user2_eof():
            return eof_as(conn, s2, tid2, path)

        # control: the bricks refuse the second user
        assert user2_eof() == STATUS_ACCESS_DENIED
        assert end_of_file(conn, tid1, path) == 123
        for attempt in range(3):
            assert ea_sizes(conn, tid1, '')
            assert 'f' in ea_sizes(conn, tid1, tmpname)
            got = user2_eof()
            assert got == STATUS_ACCESS_DENIED, (
                'a lookup kept for one user answered another', got)
    finally:
        conn.drop()
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def acl_mount(stack):
    """A FUSE mount of the stack's volume with POSIX ACLs (the stack's
    own has none), to set ACLs as another Gluster client would."""
    import tempfile
    d = tempfile.mkdtemp(prefix='gf2-acl-')
    subprocess.run(['mount', '-t', 'glusterfs', '-o', 'acl',
                    '%s:/%s' % (stack['GLUSTER_HOST'],
                                stack['GLUSTER_VOLUME']), d], check=True)
    try:
        yield d
    finally:
        subprocess.run(['umount', d])
        os.rmdir(d)


def two_users_eof(stack, share, path, first_lists):
    """End of file of path for the second user, on a connection where the
    first user listed first_lists (directories, so that their entries are
    kept); the status code if refused."""
    conn = connect(stack, share)
    try:
        s2, tid2 = second_login(conn, stack['SMB_USER2'],
                                  stack['SMB_PASS2'], share)
        for d in first_lists:
            assert ea_sizes(conn, conn.tid, d) is not None
        return eof_as(conn, s2, tid2, path)
    finally:
        conn.drop()


def dir_with_file(base, name, data, owner=None):
    """base/name, a directory (0755, of owner if given) holding one file
    f (0644) with data; returns the directory's path."""
    d = os.path.join(base, name)
    os.mkdir(d)
    with open(os.path.join(d, 'f'), 'wb') as fh:
        fh.write(data)
    os.chmod(os.path.join(d, 'f'), 0o644)
    if owner is not None:
        shutil.chown(d, owner)
    os.chmod(d, 0o755)
    return d


def test_search_refused_by_acl_entry(stack, tmpname, acl_mount):
    """A directory every user may search by its mode (0755) but whose
    POSIX ACL gives the second user no permission (u:USER2:---): the
    second user may not look inside it, on glusterfs2 as on the local
    share, even right after the first user listed it in the same smbd
    process (gfapi's md-cache then holds the entry; the module's check
    asks the bricks, whose rule includes the ACL)."""
    u2 = stack['SMB_USER2']
    got = {}
    for share, base in (('glusterfs2', acl_mount),
                        ('local', stack['LOCAL_DIR'])):
        d = dir_with_file(base, tmpname, b'a' * 77)
        subprocess.run(['setfacl', '-m', 'u:%s:---' % u2, d], check=True)
        try:
            time.sleep(1.2)
            got[share] = two_users_eof(stack, share, tmpname + '\\f',
                                       ['', tmpname])
        finally:
            shutil.rmtree(d, ignore_errors=True)
    assert got['local'] == STATUS_ACCESS_DENIED, got
    assert got['glusterfs2'] == STATUS_ACCESS_DENIED, got


def test_search_revoked_seen_within_bound(stack, tmpname):
    """The module keeps Gluster's answer to "may this user search this
    directory" for at most 1 s: after another Gluster client takes the
    permission away (chmod 0700 through FUSE), the second user, who
    looked inside the directory a moment before, is refused once that
    bound has passed, as on the local share (where the change is seen at
    once)."""
    got = {}
    for share, base in (('glusterfs2', stack['FUSE_MOUNT']),
                        ('local', stack['LOCAL_DIR'])):
        d = dir_with_file(base, tmpname, b'r' * 55, owner=stack['SMB_USER'])
        conn = connect(stack, share, user=stack['SMB_USER2'],
                       password=stack['SMB_PASS2'])
        try:
            before = end_of_file(conn, conn.tid, tmpname + '\\f')
            os.chmod(d, 0o700)
            time.sleep(1.5)
            try:
                after = end_of_file(conn, conn.tid, tmpname + '\\f')
            except smb2q.smb3.SessionError as e:
                after = e.get_error_code()
            got[share] = (before, after)
        finally:
            conn.drop()
            shutil.rmtree(d, ignore_errors=True)
    assert got['local'] == (55, STATUS_ACCESS_DENIED), got
    assert got['glusterfs2'] == (55, STATUS_ACCESS_DENIED), got


# -- with upcalls: a private smbd ---------------------------------------

@pytest.fixture(scope='module')
def srv(stack):
    vol = stack['GLUSTER_VOLUME']
    for k, v in UPCALL_OPTIONS:
        gluster('volume', 'set', vol, k, v)
    s = PrivateSmbd('searchperm', stack)
    s.write_conf([], [('gf2coh', s.gf2_share(vol=vol))])
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
