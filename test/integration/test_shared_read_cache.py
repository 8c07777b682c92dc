"""The node's shared read cache (glusterfs2:shared read cache), end to end.

A private smbd serves share gf2shr of the stack's volume with a 64 MiB
segment in blocks of 64 KiB; the volume gets Gluster's upcall options
(features.cache-invalidation and performance.cache-invalidation, without
which the module does not use the segment) for the module's tests and
loses them after.  Each SMB connection is its own smbd process, so two
connections are two Gluster clients sharing one segment.

  - a file read by one connection is read by a second one from the
    segment: the second's bytes are counted as copied from it
    (read_bytes_shared of tools/glusterfs2-stats) and the checksums are
    the file's;
  - a write through another connection, through FUSE, and a truncation
    (an open that overwrites, and FUSE's truncate) after a connection read
    the file: its next read on the same open and on a new open has the new
    bytes (an upcall reaches the reader's client shortly after a FUSE
    write: read again for up to UPCALL_WAIT_S);
  - a handle served from the segment reads from the bricks again once
    CONTACT_S passed (its client stays registered for upcalls);
  - a FUSE write while no smbd of the node holds the file (no upcall
    reaches any): the next open's check drops the segment's blocks;
  - an smbd killed (SIGKILL) while it reads leaves the others reading
    correct data from the segment;
  - a segment of other figures in place is refused with a log line, and
    the share reads correctly from Gluster.
"""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

from gf2_bricks import gluster, restart_bricks
from gf2_private_smbd import PORT_STEP, PrivateSmbd

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, 'test', 'tools'))

try:
    import smb2q
    from impacket import smb3structs as s3
except ImportError:                                     # pragma: no cover
    smb2q = None

KiB = 1024
MiB = 1024 * KiB
SHARE = 'gf2shr'
BLOCK = 64 * KiB
REQ = 256 * KiB                 # each READ covers 4 whole blocks
UPCALL_WAIT_S = 5
CONTACT_S = 30                  # GF2_SHR_CONTACT_MS
UPCALL_OPTIONS = [('features.cache-invalidation', 'on'),
                  ('features.cache-invalidation-timeout', '600'),
                  ('performance.cache-invalidation', 'on')]


@pytest.fixture(scope='module')
def srv(stack):
    if smb2q is None or smb2q.smb3 is None:
        pytest.skip('python3-impacket is not installed')
    vol = stack['GLUSTER_VOLUME']
    for k, v in UPCALL_OPTIONS:
        gluster('volume', 'set', vol, k, v)
    restart_bricks(stack)
    s = PrivateSmbd('shmcache', stack,
                    port=int(stack['SMB_PORT']) + PORT_STEP // 2)
    s.stop_leftover()
    seg = segment_path(s)
    if os.path.exists(seg):
        os.unlink(seg)
    # counters of earlier runs (the node's figures of an older segment)
    shutil.rmtree(os.path.join(s.dir, 'lock', 'glusterfs2'),
                  ignore_errors=True)
    write_conf(s)
    s.start()
    yield s
    s.stop()
    for k, _v in UPCALL_OPTIONS:
        gluster('volume', 'reset', vol, k, check=False)
    restart_bricks(stack)


def write_conf(s):
    s.write_conf([], [(SHARE, s.gf2_share([
        ('glusterfs2:shared read cache', '64M'),
        ('glusterfs2:shared read cache block', '64K')]))])


def segment_path(s):
    return os.path.join(s.dir, 'lock', 'glusterfs2_shr.%s' %
                        s.env['GLUSTER_VOLUME'])


class Client:
    """One SMB connection (so one smbd process) with plain reads."""

    def __init__(self, s):
        self.conn = smb2q.Conn('127.0.0.1', s.port, s.env['SMB_USER'],
                               s.env['SMB_PASS'], SHARE, timeout=120)
        self.c = self.conn.c
        self.tid = self.conn.tid

    def open(self, name, overwrite=False):
        self.conn.quiet()
        access = (s3.FILE_READ_DATA | s3.FILE_WRITE_DATA |
                  s3.FILE_READ_ATTRIBUTES | s3.SYNCHRONIZE)
        return self.c.create(self.tid, name, access,
                             s3.FILE_SHARE_READ | s3.FILE_SHARE_WRITE |
                             s3.FILE_SHARE_DELETE,
                             s3.FILE_NON_DIRECTORY_FILE,
                             s3.FILE_OVERWRITE_IF if overwrite
                             else s3.FILE_OPEN, s3.FILE_ATTRIBUTE_NORMAL)

    def read_all(self, fid, size):
        out = bytearray()
        while len(out) < size:
            got = self.c.read(self.tid, fid, len(out),
                              min(REQ, size - len(out)))
            if not got:
                break
            out += got
        return bytes(out)

    def write(self, fid, off, data):
        self.c.write(self.tid, fid, data, off, len(data))

    def close(self, fid):
        self.c.close(self.tid, fid)

    def drop(self):
        self.conn.drop()


def counters(s):
    """The share's counters: every process's file is written at most
    every 2 s while they change; wait for them to settle."""
    last = None
    time.sleep(2.5)
    for _ in range(20):
        p = subprocess.run([os.path.join(TOP, 'tools', 'glusterfs2-stats'),
                            '-s', s.conf, '--share', SHARE, '--json'],
                           stdout=subprocess.PIPE, universal_newlines=True,
                           check=True)
        now = json.loads(p.stdout)['shares'].get(SHARE, {})
        if now == last:
            return now
        last = now
        time.sleep(2.5)
    return last


def sha(b):
    return hashlib.sha256(b).hexdigest()


def put_fuse(stack, name, data):
    path = os.path.join(stack['FUSE_MOUNT'], name)
    with open(path, 'wb') as f:
        f.write(data)
    os.chmod(path, 0o666)           # the SMB user writes it too
    return path


def read_until(cl, fid, size, want):
    """Read the file until it has want (upcalls are delivered a moment
    after the change), at most UPCALL_WAIT_S."""
    deadline = time.monotonic() + UPCALL_WAIT_S
    while True:
        got = cl.read_all(fid, size)
        if got == want or time.monotonic() > deadline:
            return got
        time.sleep(0.2)


def test_second_reader_from_segment(srv, stack):
    data = os.urandom(4 * MiB)
    name = 'shr-second-%d' % os.getpid()
    put_fuse(stack, name, data)
    a = Client(srv)
    b = Client(srv)
    try:
        before = counters(srv)
        fa = a.open(name)
        got_a = a.read_all(fa, len(data))
        a.close(fa)
        mid = counters(srv)
        fb = b.open(name)
        got_b = b.read_all(fb, len(data))
        b.close(fb)
        after = counters(srv)
    finally:
        a.drop()
        b.drop()
        os.unlink(os.path.join(stack['FUSE_MOUNT'], name))
    assert sha(got_a) == sha(data)
    assert sha(got_b) == sha(data)
    # the first read from Gluster, filling the segment
    assert mid.get('read_bytes_gluster', 0) - \
        before.get('read_bytes_gluster', 0) == len(data)
    assert mid.get('shr_fills', 0) >= len(data) // BLOCK, mid
    shared = after.get('read_bytes_shared', 0) - \
        mid.get('read_bytes_shared', 0)
    gl = after.get('read_bytes_gluster', 0) - mid.get('read_bytes_gluster', 0)
    assert shared == len(data), (mid, after)
    assert gl == 0, (mid, after)


def _read_once(srv, name, size):
    """A connection reads the whole file (so the segment holds it)."""
    r = Client(srv)
    try:
        f = r.open(name)
        got = r.read_all(f, size)
        r.close(f)
    finally:
        r.drop()
    return got


def test_changes_seen(srv, stack):
    size = 2 * MiB
    old = os.urandom(size)
    name = 'shr-change-%d' % os.getpid()
    path = put_fuse(stack, name, old)
    a = Client(srv)
    b = Client(srv)
    try:
        assert _read_once(srv, name, size) == old
        fb = b.open(name)
        assert b.read_all(fb, size) == old
        base = counters(srv).get('read_bytes_shared', 0)

        # a write through another smbd: seen on the same open and anew
        new1 = bytearray(old)
        new1[BLOCK:3 * BLOCK] = os.urandom(2 * BLOCK)
        new1 = bytes(new1)
        fa = a.open(name)
        a.write(fa, BLOCK, new1[BLOCK:3 * BLOCK])
        assert b.read_all(fb, size) == new1, 'same open: SMB write unseen'
        assert _read_once(srv, name, size) == new1, \
            'new open: SMB write unseen'

        # through FUSE (another Gluster client): upcalls and open checks
        assert _read_once(srv, name, size) == new1
        new2 = bytearray(new1)
        new2[5 * BLOCK:6 * BLOCK] = os.urandom(BLOCK)
        new2 = bytes(new2)
        with open(path, 'r+b') as f:
            f.seek(5 * BLOCK)
            f.write(new2[5 * BLOCK:6 * BLOCK])
        assert read_until(b, fb, size, new2) == new2, \
            'same open: FUSE write unseen'
        assert _read_once(srv, name, size) == new2, \
            'new open: FUSE write unseen'

        # truncation through FUSE, then new bytes of the same size
        assert _read_once(srv, name, size) == new2
        new3 = os.urandom(size)
        with open(path, 'r+b') as f:
            f.truncate(0)
            f.write(new3)
        assert read_until(b, fb, size, new3) == new3, \
            'same open: FUSE truncation unseen'
        assert _read_once(srv, name, size) == new3, \
            'new open: FUSE truncation unseen'

        # an open that overwrites (O_TRUNC) through another smbd
        assert _read_once(srv, name, size) == new3
        a.close(fa)
        new4 = os.urandom(size)
        fa = a.open(name, overwrite=True)
        a.write(fa, 0, new4)
        a.close(fa)
        assert b.read_all(fb, size) == new4, 'same open: overwrite unseen'
        assert _read_once(srv, name, size) == new4, \
            'new open: overwrite unseen'
        b.close(fb)
        # the segment did serve in between (or the test proves nothing)
        assert counters(srv).get('read_bytes_shared', 0) - base >= size
    finally:
        a.drop()
        b.drop()
        os.unlink(path)


def test_change_while_nobody_holds_it(srv, stack):
    """A FUSE write while no smbd of the node has the file open (so no
    upcall reaches any of them): the next open's check of the file's
    figures drops what the segment holds."""
    size = 2 * MiB
    old = os.urandom(size)
    name = 'shr-nobody-%d' % os.getpid()
    path = put_fuse(stack, name, old)
    try:
        for _ in range(2):
            assert _read_once(srv, name, size) == old
        base = counters(srv).get('read_bytes_shared', 0)
        assert base >= size, 'the segment did not serve: test is void'
        new = bytearray(old)
        new[7 * BLOCK:9 * BLOCK] = os.urandom(2 * BLOCK)
        new = bytes(new)
        with open(path, 'r+b') as f:
            f.seek(7 * BLOCK)
            f.write(new[7 * BLOCK:9 * BLOCK])
        assert _read_once(srv, name, size) == new, \
            'new open: a change made while nobody held the file unseen'
    finally:
        os.unlink(path)


def test_handle_touches_the_bricks(srv, stack):
    """A handle served from the segment goes to the bricks again once
    CONTACT_S passed since it last did (so that its client stays
    registered for the file's upcalls), then is served again."""
    size = 1 * MiB
    data = os.urandom(size)
    name = 'shr-contact-%d' % os.getpid()
    put_fuse(stack, name, data)
    r = Client(srv)
    try:
        assert _read_once(srv, name, size) == data
        f = r.open(name)
        c0 = counters(srv)
        assert r.read_all(f, size) == data
        c1 = counters(srv)
        assert c1['read_bytes_shared'] - c0['read_bytes_shared'] == size
        time.sleep(CONTACT_S + 1 - 2 * 2.5)    # counters() waited 5 s
        assert r.read_all(f, size) == data
        c2 = counters(srv)
        # its first READ after the bound went to the bricks, the rest not
        assert c2['read_bytes_gluster'] - c1['read_bytes_gluster'] == REQ, \
            'served from the segment past the contact bound'
        assert c2['read_bytes_shared'] - c1['read_bytes_shared'] == \
            size - REQ
        assert r.read_all(f, size) == data
        c3 = counters(srv)
        assert c3['read_bytes_shared'] - c2['read_bytes_shared'] == size
        r.close(f)
    finally:
        r.drop()
        os.unlink(os.path.join(stack['FUSE_MOUNT'], name))


def test_reader_killed(srv, stack):
    size = 16 * MiB
    data = os.urandom(size)
    name = 'shr-kill-%d' % os.getpid()
    put_fuse(stack, name, data)
    try:
        assert _read_once(srv, name, size // 2) == data[:size // 2]
        for _ in range(3):
            victim = Client(srv)
            pid = victim.conn.server_pid
            assert pid, 'no local smbd found for the connection'
            fv = victim.open(name)
            done = []

            def reader():
                try:
                    victim.read_all(fv, size)
                except Exception:       # the server went away: expected
                    pass
                done.append(True)
            t = threading.Thread(target=reader)
            t.start()
            time.sleep(0.05)
            os.kill(pid, signal.SIGKILL)
            t.join(60)
            assert done
            try:
                victim.drop()
            except Exception:           # its server is gone
                pass
            assert sha(_read_once(srv, name, size)) == sha(data)
        before = counters(srv).get('read_bytes_shared', 0)
        assert sha(_read_once(srv, name, size)) == sha(data)
        assert counters(srv).get('read_bytes_shared', 0) > before, \
            'the segment no longer serves after a reader was killed'
    finally:
        os.unlink(os.path.join(stack['FUSE_MOUNT'], name))


def test_refused_segment(srv, stack):
    """Last: the private smbd is restarted with a segment file of other
    figures in its place."""
    seg = segment_path(srv)
    srv.stop()
    if os.path.exists(seg):
        os.unlink(seg)
    with open(seg, 'wb') as f:
        f.write(b'\0' * (2 * MiB))
    os.chmod(seg, 0o600)
    srv.start()
    size = 2 * MiB
    data = os.urandom(size)
    name = 'shr-refused-%d' % os.getpid()
    put_fuse(stack, name, data)
    try:
        before = counters(srv)
        for _ in range(2):
            assert sha(_read_once(srv, name, size)) == sha(data)
        time.sleep(1)
        logs = srv.logs()
        assert 'shared read cache refused' in logs, logs[-3000:]
        after = counters(srv)
        assert after.get('read_bytes_shared', 0) == \
            before.get('read_bytes_shared', 0)
        # read as without the option (from Gluster or prefetch)
        assert after.get('read_bytes', 0) - \
            before.get('read_bytes', 0) == 2 * size
    finally:
        os.unlink(os.path.join(stack['FUSE_MOUNT'], name))
        srv.stop()
        os.unlink(seg)
        srv.start()
