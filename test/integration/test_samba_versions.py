"""What newer Samba releases ask of the module (docs/samba-versions.md),
on glusterfs2 and on local, with the same outcome:

- a create with FILE_OPEN_FOR_BACKUP_INTENT: from 4.22 on smbd passes it to
  openat as VFS_OPEN_HOW_WITH_BACKUP_INTENT (backup tools, robocopy /B);
- a new directory: from 4.22 on smbd makes it under a temporary name and
  renames it with VFS_RENAME_HOW_NO_REPLACE, falling back when the module
  refuses that flag;
- a rename that replaces an existing file (renameat without flags).

On 4.17 the same requests take the older paths and must give the same.
"""

import os
import sys

import pytest

from conftest import TOP

sys.path.insert(0, os.path.join(TOP, 'test', 'tools'))
import smb2q  # noqa: E402

from impacket import smb3, smb3structs as s3  # noqa: E402

SHARES = ('glusterfs2', 'local')
FILE_OPEN_FOR_BACKUP_INTENT = 0x00004000


def _backup_create(stack, share, path):
    """Create path with backup intent; the status name."""
    conn = smb2q.Conn(stack['SMB_HOST'], int(stack['SMB_PORT']),
                      stack['SMB_USER'], stack['SMB_PASS'], share,
                      timeout=60.0)
    try:
        conn.quiet()
        fid = conn.c.create(
            conn.tid, path, s3.FILE_READ_DATA | s3.FILE_WRITE_DATA |
            s3.FILE_READ_ATTRIBUTES | s3.SYNCHRONIZE | s3.DELETE,
            s3.FILE_SHARE_READ | s3.FILE_SHARE_WRITE,
            s3.FILE_NON_DIRECTORY_FILE | FILE_OPEN_FOR_BACKUP_INTENT,
            s3.FILE_CREATE, s3.FILE_ATTRIBUTE_NORMAL)
        conn.close(fid)
        return 'ok'
    except smb3.SessionError as e:
        return smb2q.status_name(e.get_error_code())
    finally:
        conn.drop()


@pytest.mark.parametrize('share', SHARES)
def test_backup_intent_create(smb, stack, tmpname, share):
    data = b'backup intent\n' * 64
    got = _backup_create(stack, share, tmpname)
    assert got == 'ok', '%s: backup-intent create gave %s' % (share, got)
    c = smb(share)
    assert c.read(tmpname) == b''
    c.write(tmpname, data)
    assert c.read(tmpname) == data
    c.unlink(tmpname)


@pytest.mark.parametrize('share', SHARES)
def test_mkdir_and_rename_over(smb, tmpname, share):
    c = smb(share)
    c.mkdir(tmpname)
    c.mkdir(tmpname + '/sub')
    c.write(tmpname + '/a', b'from a\n')
    c.write(tmpname + '/b', b'from b\n')
    c.ctx.rename(c.url(tmpname + '/a'), c.url(tmpname + '/b'))
    assert c.listdir(tmpname) == ['b', 'sub']
    assert c.read(tmpname + '/b') == b'from a\n'
    # no temporary directory of smbd's is left behind
    assert c.listdir(tmpname + '/sub') == []
    assert [n for n in c.listdir('') if n.startswith('.::')] == []
    c.unlink(tmpname + '/b')
    c.rmdir(tmpname + '/sub')
    c.rmdir(tmpname)
