"""Byte-range locks taken beside smbd, and the files the lock tests work
on.

Holder: a process (not smbd) holding an exclusive fcntl lock on a range
of a file of the FUSE mount or the local directory until release().
share_files: a file of given data on each share, through the file
system, writable by the SMB user, removed afterwards.
open_rw: a Client (gf2_smb2) with the file opened for reading and
writing.
"""

import os
import subprocess
import sys
import uuid

from gf2_smb2 import Client, s3

HOLDER = r'''
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, int(sys.argv[3]),
            int(sys.argv[2]), os.SEEK_SET)
print('locked', flush=True)
sys.stdin.readline()
'''


class Holder:
    """A process (not smbd) holding an exclusive fcntl lock on
    [start, start + length) of path until release()."""

    def __init__(self, path, start, length):
        self.p = subprocess.Popen(
            [sys.executable, '-c', HOLDER, path, str(start), str(length)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            universal_newlines=True)
        line = self.p.stdout.readline().strip()
        assert line == 'locked', 'lock holder failed: %r' % line

    def release(self):
        if self.p.poll() is None:
            self.p.stdin.write('\n')
            self.p.stdin.flush()
            self.p.wait(timeout=30)


def data_of(n):
    """n bytes of a fixed pattern."""
    return bytes((i * 7 + 3) % 251 for i in range(n))


def share_files(env, shares, prefix, data, local_share):
    """A generator for a fixture: a file of data on each share, written
    through the file system (the local directory for local_share, the
    FUSE mount for the others), readable and writable by the SMB user;
    yields {share: (path on disk, name in the share)} and removes them
    afterwards."""
    tag = uuid.uuid4().hex[:10]
    out = {}
    for share in shares:
        name = '%s-%s-%s.dat' % (prefix, tag, share)
        d = env['LOCAL_DIR'] if share == local_share else env['FUSE_MOUNT']
        path = os.path.join(d, name)
        with open(path, 'wb') as f:
            f.write(data)
        os.chmod(path, 0o666)
        out[share] = (path, name)
    yield out
    for path, _name in out.values():
        try:
            os.unlink(path)
        except OSError:
            pass


def open_rw(srv, share, name):
    """(Client of share on the smbd srv names, file id of name opened to
    read and write)."""
    cl = Client(srv, share)
    status, fid = cl.create(name, disposition=s3.FILE_OPEN,
                            access=s3.FILE_READ_DATA | s3.FILE_WRITE_DATA |
                            s3.FILE_READ_ATTRIBUTES | s3.SYNCHRONIZE)
    assert status == 0, 'open %s on [%s]: %s' % (name, share, status)
    return cl, fid
