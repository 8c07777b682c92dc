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
import subprocess
import tempfile
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


HERE = os.path.dirname(os.path.abspath(__file__))


class SwapSmbd(PrivateSmbd):
    """The private smbd with swap_at_call.so preloaded: another client's
    swap made at an exact moment of smbd's work (see that file)."""

    shim = None
    arm = None

    def smbd_env(self):
        env = super().smbd_env() or dict(os.environ)
        pre = env.get('LD_PRELOAD', '')
        env['LD_PRELOAD'] = (pre + ' ' + self.shim).strip()
        env['GF2_SWAP_ARM'] = self.arm
        return env


@pytest.fixture(scope='module')
def srv(stack, layout):
    if shutil.which('cc') is None:
        pytest.skip('no C compiler here to build swap_at_call.c')
    tag, roots = layout
    work = tempfile.mkdtemp(prefix='gf2-swap-')
    # the shim runs as the request's user
    os.chmod(work, 0o777)
    shim = os.path.join(work, 'swap_at_call.so')
    subprocess.run(['cc', '-shared', '-fPIC', '-Wall', '-Werror', '-o', shim,
                    os.path.join(HERE, 'swap_at_call.c'), '-ldl'],
                   check=True)
    s = SwapSmbd('symlinkswap', stack)
    s.shim = shim
    s.arm = os.path.join(work, 'arm')
    s.write_conf([], [
        ('swap', s.gf2_share([('posix locking', 'no')], path='/' + tag)),
        ('swaplocal', [('path', os.path.join(roots['swaplocal'], tag)),
                       ('read only', 'no')]),
        # DOS attributes kept in the mode bits: a SET_INFO of them is a
        # chmod (SMB_VFS_FCHMOD)
        ('swapmode', s.gf2_share([('posix locking', 'no'),
                                  ('store dos attributes', 'no')],
                                 path='/' + tag)),
        ('swapmodelocal', [('path', os.path.join(roots['swaplocal'], tag)),
                           ('read only', 'no'),
                           ('store dos attributes', 'no')])])
    try:
        for env in s.serving():
            env = dict(env)
            env['SWAP_ARM'] = s.arm
            yield env
    finally:
        shutil.rmtree(work, ignore_errors=True)


def arm(srv, trigger, lines):
    """The next wrapped call of smbd's that names `trigger` (see
    swap_at_call.c) runs `lines` first."""
    for p in (srv['SWAP_ARM'], srv['SWAP_ARM'] + '.err'):
        if os.path.exists(p):
            os.unlink(p)
    with open(srv['SWAP_ARM'] + '.tmp', 'w') as f:
        f.write('\n'.join([trigger] + lines) + '\n')
    os.chmod(srv['SWAP_ARM'] + '.tmp', 0o666)
    os.rename(srv['SWAP_ARM'] + '.tmp', srv['SWAP_ARM'])


def fired(srv):
    """The armed swap ran, and every step of it succeeded."""
    assert not os.path.exists(srv['SWAP_ARM']), \
        'smbd never made the call the swap waited for'
    err = srv['SWAP_ARM'] + '.err'
    if os.path.exists(err):
        with open(err) as f:
            raise AssertionError('the swap failed: %s' % f.read())


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
    by a symlink to a file outside the share after smbd looked the name up
    and before its open for writing (overwrite: O_TRUNC; the swap made by
    swap_at_call.so at that open): smbd opens with O_NOFOLLOW, so the
    open must not reach the file outside, and that file must keep its
    content.  gfapi's glfs_open follows a symlink whatever O_NOFOLLOW
    says; the module looks the name up without following and keeps a
    descriptor only on the object that lookup found (gf2_open_nofollow),
    so the open fails without opening anything outside.  (smbd 4.17
    truncates only after it compared the object opened with the one it
    looked up, so the file's content alone would not tell.)  A local
    share reopens the handle it looked up through /proc/self/fd and
    writes the file the swap removed."""
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
        # smbd's open for writing (O_RDWR; it truncates later, once it
        # compared the object opened with the one it looked up)
        arm(srv, '* %d' % os.O_RDWR,
            ['unlink ' + f, 'symlink ../%s-out/t %s' % (tag, f),
             'sleep %d' % (SETTLE_S * 1000 if share == 'swap' else 0)])
        st, fid = cl.create('f', disposition=s3.FILE_OVERWRITE)
        fired(srv)
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
    # the module refuses the symlink itself; an open that followed it
    # is refused only by smbd's comparison afterwards (ACCESS_DENIED),
    # once the file outside has been opened for writing
    assert got['swap'][0] == 'STATUS_OBJECT_NAME_NOT_FOUND', \
        'the module opened the file outside the share: %r' % got


FILE_BASIC_INFORMATION = 4
FILE_RENAME_INFORMATION = 10
FILE_DISPOSITION_INFORMATION = 13


def set_info(cl, fid, cls, blob):
    cl.conn.quiet()
    try:
        cl.conn.c.setInfo(cl.conn.tid, fid, inputBlob=blob, infoType=1,
                          fileInfoClass=cls)
    except smb2q.smb3.SessionError as e:
        return e.get_error_code()
    return 0


def parent_swapped(srv, share, root, tag, what):
    """One change of an entry of d/ while another client removes d and
    puts a symlink to the directory outside the share in its place, after
    smbd opened d and before its call (swap_at_call.so).  (status, what
    the outside directory holds afterwards)."""
    d = os.path.join(root, tag, 'd')
    out = os.path.join(root, tag + '-out')
    if os.path.islink(d):
        os.unlink(d)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    os.chmod(d, 0o777)
    os.chmod(out, 0o777)
    for n in ('victim', 'renamed', 'newdir'):
        p = os.path.join(out, n)
        if os.path.isdir(p):
            os.rmdir(p)
        elif os.path.exists(p):
            os.unlink(p)
    if what in ('delete', 'rename'):
        for p, data in ((os.path.join(d, 'victim'), b'inside\n'),
                        (os.path.join(out, 'victim'), b'outside\n')):
            with open(p, 'wb') as fh:
                fh.write(data)
            os.chmod(p, 0o666)
            shutil.chown(p, srv['SMB_USER'])
    swap = ['rmdir ' + d, 'symlink ../%s-out %s' % (tag, d),
            # past the caches of the clients' lookups (md-cache)
            'sleep %d' % (SETTLE_S * 1000 if share == 'swap' else 0)]
    if what in ('delete', 'rename'):
        swap.insert(0, 'unlink ' + os.path.join(d, 'victim'))
    trigger = 'newdir' if what == 'mkdir' else 'victim'
    cl = Client(srv, share)
    if what == 'create':
        arm(srv, trigger, swap)
        st, fid = cl.create('d/victim', disposition=s3.FILE_CREATE)
        if st == 0:
            cl.close(fid)
    elif what == 'mkdir':
        arm(srv, trigger, swap)
        st, fid = cl.create('d/newdir', directory=True,
                            disposition=s3.FILE_CREATE)
        if st == 0:
            cl.close(fid)
    else:
        st, fid = cl.create('d/victim', disposition=s3.FILE_OPEN)
        assert st == 0, smb2q.status_name(st)
        if what == 'delete':
            assert set_info(cl, fid, FILE_DISPOSITION_INFORMATION,
                            b'\x01') == 0
            arm(srv, trigger, swap)
            st = cl.close(fid)
        else:
            name = 'd\\renamed'.encode('utf-16-le')
            arm(srv, trigger, swap)
            st = set_info(cl, fid, FILE_RENAME_INFORMATION,
                          struct.pack('<B7xQI', 0, 0, len(name)) + name)
            cl.close(fid)
    fired(srv)
    cl.drop()
    left = {}
    for n in sorted(set(os.listdir(out)) & {'victim', 'renamed', 'newdir'}):
        p = os.path.join(out, n)
        if os.path.isfile(p):
            with open(p, 'rb') as fh:
                left[n] = fh.read()
        else:
            left[n] = 'dir' if os.path.isdir(p) else 'other'
    return smb2q.status_name(st), left


@pytest.mark.parametrize('what', ['create', 'mkdir', 'delete', 'rename'])
def test_parent_swapped_before_the_change(srv, layout, what):
    """Create, delete and rename name an entry of a directory smbd
    opened.  Another client removes that directory and puts a symlink to
    a directory outside the share in its place, between smbd's open of it
    and the call: the change must not land outside.  A local share works
    through the directory's descriptor and fails with
    OBJECT_NAME_NOT_FOUND (the directory is gone); glusterfs2, whose
    gfapi has no *at calls, checks right before the call that the path
    still names the directory smbd opened and fails alike."""
    tag, roots = layout
    got = {share: parent_swapped(srv, share, root, tag, what)
           for share, root in roots.items()}
    before = {'victim': b'outside\n'} if what in ('delete', 'rename') \
        else {}
    assert got['swaplocal'] == ('STATUS_OBJECT_NAME_NOT_FOUND', before), got
    assert got['swap'][1] == before, (
        'the %s through the swapped directory changed the directory '
        'outside the share: %r' % (what, got))
    assert got['swap'] == got['swaplocal'], got


def test_mode_change_through_a_handle_swapped_for_a_symlink(srv, layout):
    """A file opened for its attributes only (a stat open: smbd keeps its
    path-only handle, the module has no Gluster fd for it), then deleted
    by another client and replaced by a symlink to a file outside the
    share; the SMB client then sets READONLY through the handle, on a
    share that keeps DOS attributes in the mode bits (store dos
    attributes = no), which smbd makes a chmod of the handle
    (SMB_VFS_FCHMOD).  smbd's fstat of the handle before the change now
    finds the symlink, so the handle looks like a symlink's: gfapi has no
    lchmod, and the module once changed such a handle's mode by path,
    following the symlink, without the check every other change by path
    makes (that the name still is the object the handle opened).  The
    file outside must keep its mode, and the answer be local's:
    OBJECT_NAME_NOT_FOUND (glusterfs2 finds that the name is no longer
    the object the handle opened, as for the other changes of a handle
    whose name was swapped)."""
    tag, roots = layout
    got = {}
    for share, root in (('swapmode', roots['swap']),
                        ('swapmodelocal', roots['swaplocal'])):
        f = os.path.join(root, tag, 'm')
        target = os.path.join(root, tag + '-out', 'mt')
        with open(f, 'wb') as fh:
            fh.write(b'inside\n')
        os.chmod(f, 0o666)
        with open(target, 'wb') as fh:
            fh.write(b'outside\n')
        os.chmod(target, 0o644)
        shutil.chown(target, srv['SMB_USER'])
        cl = Client(srv, share)
        st, fid = cl.create('m', disposition=s3.FILE_OPEN,
                            access=s3.FILE_READ_ATTRIBUTES |
                            s3.FILE_WRITE_ATTRIBUTES | s3.SYNCHRONIZE)
        assert st == 0, smb2q.status_name(st)
        os.unlink(f)
        os.symlink('../%s-out/mt' % tag, f)
        if share == 'swapmode':
            # past the caches of the clients' lookups (md-cache)
            time.sleep(SETTLE_S)
        st = set_info(cl, fid, FILE_BASIC_INFORMATION,
                      struct.pack('<QQQQII', 0, 0, 0, 0,
                                  s3.FILE_ATTRIBUTE_READONLY, 0))
        cl.close(fid)
        cl.drop()
        got[share] = (smb2q.status_name(st),
                      oct(os.stat(target).st_mode & 0o7777))
        os.unlink(f)
        os.unlink(target)
    assert got['swapmodelocal'] == ('STATUS_OBJECT_NAME_NOT_FOUND',
                                    oct(0o644)), got
    assert got['swapmode'][1] == oct(0o644), \
        'the mode change through the handle reached the file outside ' \
        'the share: %r' % got
    assert got['swapmode'] == got['swapmodelocal'], got
