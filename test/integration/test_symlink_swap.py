"""A directory swapped for a symlink under an open handle: changes made
through the handle stay on the object smbd opened, never outside the
share.

A directory handle (and a path-only handle) has no Gluster fd, so the
module once made its changes by path, and gfapi follows a symlink at that
path: another Gluster client that swaps the directory for a symlink to
somewhere outside the share after smbd opened it redirected the SMB
client's changes there.

The share's path is a subdirectory of the volume, SUB, so that "outside"
exists: SUB-out/e, a directory beside it, owned by the SMB user (so that
only the share's boundary, not a permission, keeps the changes out).
Through [swap] (glusterfs2, path /SUB) and [swaplocal] (the default VFS,
the same layout in the stack's local directory, the reference) the test
opens the directory d/e, then the file system's own client (FUSE for the
volume) renames d to d.orig and puts a symlink d -> ../SUB-out in its
place, so that the path d/e now names SUB-out/e; then the SMB client sets,
through the open handle, the write time (FileBasicInformation), an
extended attribute (FileFullEaInformation) and the DOS attributes.
SUB-out/e must be left exactly as it was (times, xattrs), and what was
set must be on d.orig/e, as on local.

A rename leaves gfapi's inode table pointing d/e at the directory now
called d.orig/e (names it looked up stay linked to the inodes they named,
revalidated by their gfid).  When the opened directory's parent is
deleted instead (test_swap_after_delete_does_not_redirect_changes),
gfapi's name is gone with it, a fresh lookup of d/e follows the new
symlink and lands on SUB-out/e: the module once changed that directory
(its times, its xattrs).  It now makes such changes on the object a fresh
lookup finds only if that is the object the handle opened (the inode
number kept at open), and fails them with ENOENT otherwise, where local
fails them too.  A swap of the handle's own last component is refused
besides: smbd opens with O_NOFOLLOW, and the module looks names up
without following for such handles.
"""

import os
import shutil
import struct
import time
import uuid

import pytest

from gf2_private_smbd import PrivateSmbd
from gf2_smb2 import Client, s3, smb2q

NT_EPOCH = 11644473600
SETTLE_S = 3
SET_WRITE = 1500000000          # seconds, a time nothing else sets
EA_NAME = b'GF2SWAP'
EA_VALUE = b'set through the handle'


def nt(sec):
    return (sec + NT_EPOCH) * 10000000


def xattrs(path):
    return {n: os.getxattr(path, n, follow_symlinks=False)
            for n in os.listxattr(path, follow_symlinks=False)
            if n.startswith('user.')}


@pytest.fixture(scope='module')
def layout(stack):
    tag = 'swap-' + uuid.uuid4().hex[:10]
    roots = {'swap': stack['FUSE_MOUNT'], 'swaplocal': stack['LOCAL_DIR']}
    for root in roots.values():
        os.makedirs(os.path.join(root, tag, 'd', 'e'))
        os.makedirs(os.path.join(root, tag + '-out', 'e'))
        for p in (tag, os.path.join(tag, 'd'), os.path.join(tag, 'd', 'e')):
            os.chmod(os.path.join(root, p), 0o777)
        # the user's own directory: no permission check stands in the
        # way, only the share's boundary
        shutil.chown(os.path.join(root, tag + '-out', 'e'),
                     stack['SMB_USER'])
    yield tag, roots
    for root in roots.values():
        shutil.rmtree(os.path.join(root, tag), ignore_errors=True)
        shutil.rmtree(os.path.join(root, tag + '-out'), ignore_errors=True)


@pytest.fixture(scope='module')
def srv(stack, layout):
    tag, roots = layout
    s = PrivateSmbd('symlinkswap', stack)
    s.write_conf([], [
        ('swap', s.gf2_share([('posix locking', 'no')], path='/' + tag)),
        ('swaplocal', [('path', os.path.join(roots['swaplocal'], tag)),
                       ('read only', 'no')])])
    yield from s.serving()


def outcome(srv, share, root, tag, how='rename'):
    out_dir = os.path.join(root, tag + '-out', 'e')
    d = os.path.join(root, tag, 'd')
    st0 = os.stat(out_dir)
    x0 = xattrs(out_dir)
    cl = Client(srv, share)
    st, fid = cl.create('d/e', directory=True, disposition=s3.FILE_OPEN,
                        access=s3.FILE_READ_ATTRIBUTES |
                        s3.FILE_WRITE_ATTRIBUTES | s3.FILE_READ_EA |
                        s3.FILE_WRITE_EA | s3.SYNCHRONIZE)
    assert st == 0, smb2q.status_name(st)
    # another client swaps the directory for a symlink out of the share
    if how == 'rename':
        os.rename(d, d + '.orig')
    else:
        shutil.rmtree(d)
    os.symlink('../%s-out' % tag, d)
    # past the caches of the clients' lookups (md-cache, nl-cache)
    time.sleep(SETTLE_S)
    c, tid = cl.conn.c, cl.conn.tid
    results = []
    for what, cls, blob in (
            ('write time', 4, struct.pack('<QQQQII', 0, 0, nt(SET_WRITE),
                                          0, 0, 0)),
            ('ea', 15, struct.pack('<IBBH', 0, 0, len(EA_NAME),
                                   len(EA_VALUE)) + EA_NAME + b'\0' +
             EA_VALUE),
            ('attributes', 4, struct.pack(
                '<QQQQII', 0, 0, 0, 0, s3.FILE_ATTRIBUTE_DIRECTORY |
                s3.FILE_ATTRIBUTE_HIDDEN, 0))):
        cl.conn.quiet()
        try:
            c.setInfo(tid, fid, inputBlob=blob, infoType=1,
                      fileInfoClass=cls)
            results.append((what, 0))
        except Exception as e:          # the status is the outcome
            code = getattr(e, 'get_error_code', lambda: -1)()
            results.append((what, smb2q.status_name(code)))
    cl.close(fid)
    cl.drop()
    st1 = os.stat(out_dir)
    x1 = xattrs(out_dir)
    orig = os.path.join(d + '.orig', 'e')
    if how != 'rename':
        return {'results': results,
                'outside mtime kept': st1.st_mtime_ns == st0.st_mtime_ns,
                'outside xattrs kept': x1 == x0}
    return {
        'results': results,
        'outside mtime kept': st1.st_mtime_ns == st0.st_mtime_ns,
        'outside xattrs kept': x1 == x0,
        'write time on the opened dir':
            int(os.stat(orig).st_mtime) == SET_WRITE,
        'ea on the opened dir':
            xattrs(orig).get('user.' + EA_NAME.decode()) == EA_VALUE,
        'dos attributes on the opened dir':
            'user.DOSATTRIB' in xattrs(orig),
    }


def test_swap_does_not_redirect_changes(srv, layout):
    tag, roots = layout
    got = {share: outcome(srv, share, root, tag)
           for share, root in roots.items()}
    local = got["swaplocal"]
    assert local['outside mtime kept'] and local['outside xattrs kept'], \
        local
    g2 = got['swap']
    assert g2['outside mtime kept'], \
        'a change through the handle reached the directory outside the ' \
        'share: %r' % g2
    assert g2['outside xattrs kept'], \
        'xattrs set through the handle landed outside the share: %r' % g2
    assert g2 == local, (g2, local)


def test_swap_after_delete_does_not_redirect_changes(srv, layout):
    """The same with the opened directory's parent deleted (so gfapi's
    name for it is gone too) before the symlink is put in its place."""
    tag, roots = layout
    got = {}
    for share, root in roots.items():
        d = os.path.join(root, tag, 'd')
        if os.path.islink(d):
            os.unlink(d)
        os.makedirs(os.path.join(d, 'e'))
        os.chmod(d, 0o777)
        os.chmod(os.path.join(d, 'e'), 0o777)
        got[share] = outcome(srv, share, root, tag, how='delete')
    assert got['swaplocal']['outside mtime kept'] and \
        got['swaplocal']['outside xattrs kept'], got
    assert got['swap']['outside mtime kept'] and \
        got['swap']['outside xattrs kept'], got


def test_file_swapped_after_listing_is_not_opened(srv, layout):
    """A file that a listing showed (its stat kept by smbd's lookups and
    the module's metadata cache), deleted by another client and replaced
    by a symlink to a file outside the share just before the SMB client
    opens it for writing (overwrite: O_TRUNC): smbd opens with O_NOFOLLOW,
    so the open must not reach the file outside, and that file must keep
    its content.

    This passes with and without the module's own nofollow open (checked
    with glfs_open following the symlink put back): smbd looks the name
    up again right before the open and stops on the symlink itself.  What
    the module adds is for the window between that lookup and the open,
    which no client here can hit on purpose: it opens exactly the object
    a lookup without following found (glfs_h_lookupat, glfs_h_open),
    since gfapi's glfs_open follows a symlink whatever O_NOFOLLOW says."""
    tag, roots = layout
    got = {}
    for share, root in roots.items():
        f = os.path.join(root, tag, 'f')
        target = os.path.join(root, tag + '-out', 't')
        with open(f, 'wb') as fh:
            fh.write(b'inside\n')
        os.chmod(f, 0o666)
        with open(target, 'wb') as fh:
            fh.write(b'outside\n')
        shutil.chown(target, srv['SMB_USER'])
        cl = Client(srv, share)
        cl.conn.quiet()
        st, dfid = cl.create('', directory=True, disposition=s3.FILE_OPEN)
        assert st == 0, smb2q.status_name(st)
        cl.conn.c.queryDirectory(cl.conn.tid, dfid, '*',
                                 informationClass=37)
        cl.close(dfid)
        os.unlink(f)
        os.symlink('../%s-out/t' % tag, f)
        # overwrite: O_TRUNC, which damages what it opens before smbd
        # can compare the opened file with the one it looked up
        st, fid = cl.create('f', disposition=s3.FILE_OVERWRITE)
        wrote = None
        if st == 0:
            wrote = cl.write(fid, 0, b'SMB wrote this\n')[0]
            cl.close(fid)
        cl.drop()
        with open(target, 'rb') as fh:
            got[share] = (smb2q.status_name(st), fh.read())
        os.unlink(f)
    assert got['swaplocal'][1] == b'outside\n', got
    assert got['swap'][1] == b'outside\n', \
        'the open followed the symlink out of the share: %r' % got
