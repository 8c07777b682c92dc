"""A share's root is the path on the volume, whatever the local file
system has there: a share whose path is a directory of the volume that
does not exist locally connects and lists that directory; one whose path
is missing on the volume, or is a file there, is refused at tree connect
with NT_STATUS_BAD_NETWORK_NAME, as a local share with such a path is.

From Samba 4.25 (VFS interface 53) smbd asks the module for the share's
root at tree connect (open_share_root_fn); a module that left the slot to
vfs_default would have smbd look at the local path instead, and the first
share would be refused.  Before 4.25 smbd stats the path through the
module's stat; the outcomes are the same.
"""

import os
import uuid

from gf2_private_smbd import PrivateSmbd


def test_share_root_is_the_volume_path(stack):
    srv = PrivateSmbd('shareroot', stack)
    tag = 'gf2root-%s' % uuid.uuid4().hex[:8]
    vdir = os.path.join(stack['FUSE_MOUNT'], tag)
    os.makedirs(os.path.join(vdir, 'sub'))
    with open(os.path.join(vdir, 'sub', 'seen.txt'), 'w') as f:
        f.write('on the volume\n')
    with open(os.path.join(vdir, 'afile'), 'w') as f:
        f.write('a file\n')
    assert not os.path.exists('/' + tag)
    ldir = os.path.join(stack['LOCAL_DIR'], tag)
    os.makedirs(ldir)
    with open(os.path.join(ldir, 'afile'), 'w') as f:
        f.write('a file\n')

    def gshare(path):
        return srv.gf2_share(path=path)

    def lshare(path):
        return [('path', path), ('read only', 'no')]

    shares = [
        ('gvoldir', gshare('/%s/sub' % tag)),
        ('gmissing', gshare('/%s/missing' % tag)),
        ('gfile', gshare('/%s/afile' % tag)),
        ('lmissing', lshare(os.path.join(ldir, 'missing'))),
        ('lfile', lshare(os.path.join(ldir, 'afile'))),
    ]
    srv.write_conf([], shares)
    srv.start()
    try:
        got = {}
        for name, _ in shares:
            p = srv.smbclient(name, 'ls', timeout=120)
            got[name] = p
        ok = got['gvoldir']
        assert ok.returncode == 0 and 'seen.txt' in ok.stdout, \
            ok.stdout + srv.logs()
        for name in ('gmissing', 'gfile', 'lmissing', 'lfile'):
            p = got[name]
            assert p.returncode != 0, (name, p.stdout)
            assert 'NT_STATUS_BAD_NETWORK_NAME' in p.stdout, (name, p.stdout)
    finally:
        srv.stop()
        for root, dirs, files in os.walk(vdir, topdown=False):
            for f in files:
                os.unlink(os.path.join(root, f))
            for d in dirs:
                os.rmdir(os.path.join(root, d))
        os.rmdir(vdir)
        os.unlink(os.path.join(ldir, 'afile'))
        os.rmdir(ldir)
