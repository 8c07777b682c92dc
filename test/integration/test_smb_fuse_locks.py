"""SMB byte-range locks against POSIX locks of another Gluster client.

The stack serves its shares with Samba's default `posix locking = yes`:
an SMB2 LOCK becomes a POSIX lock on the file (glfs_posix_lock through
glusterfs2, fcntl on the local share), and smbd checks the locks of
other processes before reads and writes of handles without a lease.
The other client here is a process on the FUSE mount of the same
volume (for [local]: a process on the local directory), taking
non-blocking F_SETLK locks.  Each direction, on [glusterfs2] beside
[local]:

- an SMB lock conflicts with the other client's F_SETLK on the range
  (not outside it), and is released on SMB unlock, on SMB close and when
  the SMB client disconnects;
- the other client's F_SETLK lock makes an SMB lock of the range fail
  (not outside it) and SMB reads and writes of the range fail with
  FILE_LOCK_CONFLICT, and is released (SMB locks granted again) on
  F_UNLCK, on closing its descriptor and when the process exits.

test_foreign_lock_seen_by_next_read: a lock taken right after an SMB
read of the same handle must conflict with the very next read and write,
as on local.  glusterfs2's `glusterfs2:posix lock cache` (N ms) answers
"not locked" for N ms after Gluster last said so: with a default above 0
that next read passes, which is why that test is a strict xfail exactly
while the default in source/gf2_options.c is above 0.
"""

import os
import re
import struct
import subprocess
import sys
import time

import pytest

from conftest import TOP
from gf2_locks import share_files
from gf2_smb2 import Client, STATUS, s3, smb2q

SHARES = ('glusterfs2', 'local')
SIZE = 64 * 1024
OK = 0
NOT_GRANTED = STATUS['STATUS_LOCK_NOT_GRANTED']
CONFLICT = STATUS['STATUS_FILE_LOCK_CONFLICT']
# how long an smbd child may take to go after its client disconnected
# (a gfapi share's disconnect waits for glfs_fini, ~10 s)
GONE_S = 45
LOCK_REQ = struct.Struct('<HHI16s')     # SMB2 LOCK request, 24 bytes
LOCK_ELEMENT = struct.Struct('<QQII')   # one lock: offset, length, flags

PROBE = r'''
import errno, fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
for line in sys.stdin:
    w = line.split()
    if not w:
        continue
    try:
        if w[0] in ('lock', 'try'):
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, int(w[2]),
                        int(w[1]), os.SEEK_SET)
            if w[0] == 'try':
                fcntl.lockf(fd, fcntl.LOCK_UN, int(w[2]), int(w[1]),
                            os.SEEK_SET)
        elif w[0] == 'unlock':
            fcntl.lockf(fd, fcntl.LOCK_UN, int(w[2]), int(w[1]),
                        os.SEEK_SET)
        elif w[0] == 'close':
            os.close(fd)
            fd = os.open(sys.argv[1], os.O_RDWR)
        print('ok', flush=True)
    except OSError as e:
        print('conflict' if e.errno in (errno.EAGAIN, errno.EACCES)
              else 'error %s' % errno.errorcode.get(e.errno, e.errno),
              flush=True)
'''


class Probe:
    """A process on the file system (FUSE mount or local directory) with
    the file open: lock / try (lock and unlock) / unlock START LEN,
    close (the descriptor, then opens it again), exit."""

    def __init__(self, path):
        self.p = subprocess.Popen([sys.executable, '-c', PROBE, path],
                                  stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE,
                                  universal_newlines=True)

    def __call__(self, *words):
        self.p.stdin.write(' '.join(str(w) for w in words) + '\n')
        self.p.stdin.flush()
        return self.p.stdout.readline().strip() or 'probe died'

    def exit(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            self.p.wait(timeout=30)


def smb_lock(cl, fid, off, length, unlock=False):
    """One SMB2 LOCK of [off, off + length): exclusive, fail immediately
    (or the unlock); the status."""
    flags = s3.SMB2_LOCKFLAG_UNLOCK if unlock else \
        s3.SMB2_LOCKFLAG_EXCLUSIVE_LOCK | s3.SMB2_LOCKFLAG_FAIL_IMMEDIATELY
    body = LOCK_REQ.pack(48, 1, 0, fid) + LOCK_ELEMENT.pack(off, length,
                                                            flags, 0)
    p = smb2q.RawPacket(s3.SMB2_LOCK, cl.conn.tid, body)
    status, _ = cl.request(p)
    return status


@pytest.fixture
def files(stack):
    """{share: (path on the file system, name in the share)}: a SIZE-byte
    file on each, writable by the SMB user."""
    yield from share_files(stack, SHARES, 'smblocks', bytes(SIZE), 'local')


def open_fid(cl, name):
    status, fid = cl.create(name, disposition=s3.FILE_OPEN,
                            access=s3.FILE_READ_DATA | s3.FILE_WRITE_DATA |
                            s3.FILE_READ_ATTRIBUTES | s3.SYNCHRONIZE)
    assert status == 0, 'open %s on [%s]: %s' % (name, cl.share, status)
    return fid


def open_rw(stack, share, name):
    cl = Client(stack, share)
    return cl, open_fid(cl, name)


def wait_free(probe, start, length, secs):
    """The probe's 'try' until it is ok or SECS have passed."""
    deadline = time.monotonic() + secs
    r = probe('try', start, length)
    while r != 'ok' and time.monotonic() < deadline:
        time.sleep(0.25)
        r = probe('try', start, length)
    return r


def test_smb_lock_against_fuse(stack, files):
    """An SMB lock conflicts with another client's F_SETLK on its range
    only, and goes on unlock, close and disconnect."""
    results = {}
    for share in SHARES:
        path, name = files[share]
        probe = Probe(path)
        seq = []
        try:
            cl, fid = open_rw(stack, share, name)
            seq.append(('smb lock', smb_lock(cl, fid, 0, 4096)))
            seq.append(('fs lock in range', probe('try', 0, 4096)))
            seq.append(('fs lock outside', probe('try', 8192, 4096)))
            seq.append(('smb unlock', smb_lock(cl, fid, 0, 4096, True)))
            seq.append(('fs lock after unlock', probe('try', 0, 4096)))
            seq.append(('smb lock again', smb_lock(cl, fid, 0, 4096)))
            seq.append(('fs lock before close', probe('try', 0, 4096)))
            seq.append(('smb close', cl.close(fid)))
            seq.append(('fs lock after close', probe('try', 0, 4096)))
            fid = open_fid(cl, name)
            seq.append(('smb lock after reopen', smb_lock(cl, fid, 0, 4096)))
            seq.append(('fs lock before disconnect', probe('try', 0, 4096)))
            cl.drop()
            seq.append(('fs lock after disconnect',
                        wait_free(probe, 0, 4096, GONE_S)))
        finally:
            probe.exit()
        results[share] = seq
    expected = [('smb lock', OK), ('fs lock in range', 'conflict'),
                ('fs lock outside', 'ok'), ('smb unlock', OK),
                ('fs lock after unlock', 'ok'), ('smb lock again', OK),
                ('fs lock before close', 'conflict'), ('smb close', OK),
                ('fs lock after close', 'ok'),
                ('smb lock after reopen', OK),
                ('fs lock before disconnect', 'conflict'),
                ('fs lock after disconnect', 'ok')]
    assert results['local'] == expected, results['local']
    assert results['glusterfs2'] == expected, results['glusterfs2']


def io_status(cl, fid):
    """(read status, write status) of the range [0, 4096)."""
    return cl.read(fid, 0, 4096)[0], cl.write(fid, 2048, b'x' * 16)[0]


def test_fuse_lock_against_smb(stack, files):
    """Another client's F_SETLK lock makes SMB locks, reads and writes of
    its range fail (not outside it), and goes on F_UNLCK, on closing its
    descriptor and when its process exits."""
    results = {}
    for share in SHARES:
        path, name = files[share]
        probe = Probe(path)
        cl, fid = open_rw(stack, share, name)
        seq = []
        try:
            seq.append(('fs lock', probe('lock', 0, 4096)))
            seq.append(('smb lock in range', smb_lock(cl, fid, 0, 4096)))
            seq.append(('smb lock outside', smb_lock(cl, fid, 8192, 4096)))
            seq.append(('smb unlock outside',
                        smb_lock(cl, fid, 8192, 4096, True)))
            seq.append(('smb read, write in range', io_status(cl, fid)))
            seq.append(('fs unlock', probe('unlock', 0, 4096)))
            seq.append(('smb lock after fs unlock',
                        smb_lock(cl, fid, 0, 4096)))
            seq.append(('smb unlock', smb_lock(cl, fid, 0, 4096, True)))
            seq.append(('fs lock again', probe('lock', 0, 4096)))
            seq.append(('smb lock before fs close',
                        smb_lock(cl, fid, 0, 4096)))
            seq.append(('fs close', probe('close')))
            seq.append(('smb lock after fs close',
                        smb_lock(cl, fid, 0, 4096)))
            seq.append(('smb unlock 2', smb_lock(cl, fid, 0, 4096, True)))
            seq.append(('fs lock before exit', probe('lock', 0, 4096)))
            seq.append(('smb lock before fs exit',
                        smb_lock(cl, fid, 0, 4096)))
            probe.exit()
            seq.append(('smb lock after fs exit',
                        smb_lock(cl, fid, 0, 4096)))
            seq.append(('smb unlock 3', smb_lock(cl, fid, 0, 4096, True)))
            cl.alive()
            cl.close(fid)
        finally:
            probe.exit()
            cl.drop()
        results[share] = seq
    expected = [('fs lock', 'ok'), ('smb lock in range', NOT_GRANTED),
                ('smb lock outside', OK), ('smb unlock outside', OK),
                ('smb read, write in range', (CONFLICT, CONFLICT)),
                ('fs unlock', 'ok'), ('smb lock after fs unlock', OK),
                ('smb unlock', OK), ('fs lock again', 'ok'),
                ('smb lock before fs close', NOT_GRANTED),
                ('fs close', 'ok'), ('smb lock after fs close', OK),
                ('smb unlock 2', OK), ('fs lock before exit', 'ok'),
                ('smb lock before fs exit', NOT_GRANTED),
                ('smb lock after fs exit', OK), ('smb unlock 3', OK)]
    assert results['local'] == expected, results['local']
    assert results['glusterfs2'] == expected, results['glusterfs2']


def lock_cache_default():
    """The default of glusterfs2:posix lock cache in the option table."""
    with open(os.path.join(TOP, 'source', 'gf2_options.c')) as f:
        m = re.search(r'"posix lock cache",[^}]*?GF2_OPT\(lock_cache_ms\),'
                      r'\s*(\d+)', f.read())
    assert m, 'posix lock cache not found in source/gf2_options.c'
    return int(m.group(1))


@pytest.mark.xfail(lock_cache_default() > 0, strict=True, reason=(
    'glusterfs2:posix lock cache defaults to %d ms: after a read found no '
    'lock, reads and writes of the handle are answered "not locked" for '
    'that long without asking Gluster, so a lock of another Gluster client '
    'taken meanwhile is missed (the stock module and local see it at the '
    'next read)' % lock_cache_default()))
def test_foreign_lock_seen_by_next_read(stack, files):
    """A lock of another client taken right after an SMB read: the very
    next SMB read and write of the range conflict, as on local."""
    results = {}
    for share in SHARES:
        path, name = files[share]
        probe = Probe(path)
        cl, fid = open_rw(stack, share, name)
        try:
            before = io_status(cl, fid)
            locked = probe('lock', 0, 4096)
            results[share] = (before, locked, io_status(cl, fid))
            probe('unlock', 0, 4096)
            cl.close(fid)
        finally:
            probe.exit()
            cl.drop()
    expected = ((OK, OK), 'ok', (CONFLICT, CONFLICT))
    assert results['local'] == expected, results['local']
    assert results['glusterfs2'] == expected, results['glusterfs2']
