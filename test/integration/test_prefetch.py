"""Sequential-read prefetch: correct data, and coherence within the
documented bounds.

glusterfs2 share: prefetch on, coherence "age", max age 250 ms (defaults).
glusterfs2-strict share: coherence "strict" (prefetched data only under a
read lease or oplock; python3-smbc takes neither, so reads go to Gluster).
glusterfs2-age share: max age 2 s, long enough to see inside the bound
that a range was prefetched (the old data is served, and the counters
of tools/glusterfs2-stats show bytes served from prefetch memory).
glusterfs2-longage share: max age 60 s, for the upcall test.

Reads left waiting for a prefetch chunk that a change dropped in flight
are answered (raw SMB2 requests, the bricks' reads slowed down); a share
without prefetch in the same smbd process as one with it drops the
process's prefetched data when it writes (a private smbd serving both).
"""

import os
import shutil
import struct
import subprocess
import time

import pytest

from conftest import Smb, sha256, share_counters
from gf2_smb2 import (Client, FILE_ALLOCATION_INFORMATION,
                      FILE_END_OF_FILE_INFORMATION, close_packet, collect,
                      connect, open_file, read_data, read_on, s3,
                      set_info_packet, smb2q, write_on, zero_data_packet)

MiB = 1 << 20
MAX_AGE = 0.250          # glusterfs2:prefetch max age default, seconds
AGE_SHARE = 'glusterfs2-age'
AGE = 2.0                # its glusterfs2:prefetch max age, seconds


def prefetch_served(stack, share, before, want, timeout=40):
    """Bytes served from prefetch memory on SHARE since BEFORE, once they
    reach WANT (the smbd processes merge their counters when their tree
    connect ends) or TIMEOUT has passed."""
    deadline = time.time() + timeout
    while True:
        n = share_counters(stack, share).get('read_bytes_prefetch', 0) - \
            before.get('read_bytes_prefetch', 0)
        if n >= want or time.time() > deadline:
            return n
        time.sleep(0.5)


def pattern(tag, size):
    """Deterministic data: tag and offset in every 16-byte cell."""
    out = bytearray()
    for off in range(0, size, 16):
        out += b'%c%015x' % (tag, off)
    return bytes(out[:size])


def seq_read(f, size, block):
    chunks = []
    left = size
    while left > 0:
        b = f.read(min(block, left))
        if not b:
            break
        chunks.append(b)
        left -= len(b)
    return b''.join(chunks)


@pytest.mark.parametrize('block', [4096, 65536, 100000, MiB, 3 * MiB + 5])
def test_sequential_reads_checksum(smb, stack, tmpname, block):
    """Written by another Gluster client (the FUSE mount), read in
    sequence through glusterfs2: the bytes are the file's, not what the
    serving process remembers of its own writes."""
    c = smb('glusterfs2')
    data = os.urandom(40 * MiB + 12345)
    path = os.path.join(stack['FUSE_MOUNT'], tmpname)
    with open(path, 'wb') as fh:
        fh.write(data)
    os.chmod(path, 0o666)
    with open(path, 'rb') as fh:
        assert sha256(fh.read()) == sha256(data)
    f = c.ctx.open(c.url(tmpname), os.O_RDONLY)
    got = seq_read(f, len(data) + 3 * MiB, block)
    assert len(got) == len(data)
    assert sha256(got) == sha256(data)
    # past EOF: nothing
    assert f.read(block) == b''
    f.close()
    os.unlink(path)


def test_reads_spanning_prefetched_and_missing(smb, tmpname):
    """Sequential stream, then jumps back, forward and across the prefetch
    window: every read returns exactly the file's bytes."""
    c = smb('glusterfs2')
    data = pattern(ord('A'), 32 * MiB)
    c.write(tmpname, data)
    f = c.ctx.open(c.url(tmpname), os.O_RDONLY)
    seq_read(f, 6 * MiB, 65536)          # establish a stream
    for off, n in [(6 * MiB - 100, 5 * MiB), (1, 7), (20 * MiB, 64 * 1024),
                   (6 * MiB + 65536, 3 * MiB), (32 * MiB - 10, 100),
                   (32 * MiB + 5, 10)]:
        f.seek(off)
        got = f.read(n)
        assert got == data[off:off + n], (off, n)
    f.close()
    c.unlink(tmpname)


def _stream_then_check(reader_share, writer, stack, tmpname, wait,
                       need_prefetch=True):
    """Reader streams the first 4 MiB, a writer changes [8, 9) MiB, then the
    reader continues through it; returns the bytes it read there.  The
    reader must have been served from prefetch memory (counters): a
    reader that prefetched nothing would see the write whatever the
    module dropped or kept, and prove nothing (need_prefetch=False: a
    share that by design serves none)."""
    before = share_counters(stack, reader_share)
    r = Smb(stack, reader_share)
    r.write(tmpname, pattern(ord('A'), 32 * MiB))
    f = r.ctx.open(r.url(tmpname), os.O_RDONLY)
    seq_read(f, 4 * MiB, 65536)          # prefetch now runs ahead
    time.sleep(0.05)
    writer(8 * MiB, pattern(ord('B'), 32 * MiB)[8 * MiB:9 * MiB])
    time.sleep(wait)
    seq_read(f, 4 * MiB, 65536)          # 4..8 MiB
    got = seq_read(f, MiB, 65536)        # 8..9 MiB
    f.close()
    r.unlink(tmpname)
    if not need_prefetch:
        return got
    served = prefetch_served(stack, reader_share, before, 4 * MiB)
    assert served >= 4 * MiB, \
        'only %d bytes served from prefetch memory: the case needs a ' \
        'reader that prefetched' % served
    return got


def _smb_writer(stack, share, tmpname):
    w = Smb(stack, share)

    def write(off, data):
        f = w.ctx.open(w.url(tmpname), os.O_WRONLY)
        f.seek(off)
        assert f.write(data) == len(data)
        f.close()
    return write


def _fuse_writer(stack, tmpname):
    def write(off, data):
        fd = os.open(os.path.join(stack['FUSE_MOUNT'], tmpname), os.O_WRONLY)
        try:
            assert os.pwrite(fd, data, off) == len(data)
            os.fsync(fd)
        finally:
            os.close(fd)
    return write


NEW = pattern(ord('B'), 32 * MiB)[8 * MiB:9 * MiB]
OLD = pattern(ord('A'), 32 * MiB)[8 * MiB:9 * MiB]


def test_writer_other_connection_seen_after_max_age(stack, tmpname):
    """Another smbd process writes: the reader sees it once max age has
    passed since the write completed."""
    got = _stream_then_check('glusterfs2',
                             _smb_writer(stack, 'glusterfs2', tmpname),
                             stack, tmpname, MAX_AGE + 0.25)
    assert got == NEW


def test_writer_fuse_seen_after_max_age(stack, tmpname):
    got = _stream_then_check('glusterfs2', _fuse_writer(stack, tmpname),
                             stack, tmpname, MAX_AGE + 0.25)
    assert got == NEW


def test_writer_same_process_seen_at_once(stack, tmpname):
    """A write through another handle of the same smbd process drops the
    overlapping prefetched data before it is sent: seen at once.  The
    reader must have been served from prefetch memory (counters), or
    the case proves nothing."""
    before = share_counters(stack, 'glusterfs2')
    r = Smb(stack, 'glusterfs2')
    r.write(tmpname, pattern(ord('A'), 32 * MiB))
    f = r.ctx.open(r.url(tmpname), os.O_RDONLY)
    seq_read(f, 4 * MiB, 65536)
    time.sleep(0.05)
    g = r.ctx.open(r.url(tmpname), os.O_WRONLY)
    g.seek(8 * MiB)
    assert g.write(NEW) == len(NEW)
    g.close()
    seq_read(f, 4 * MiB, 65536)
    assert seq_read(f, MiB, 65536) == NEW
    f.close()
    r.unlink(tmpname)
    served = prefetch_served(stack, 'glusterfs2', before, 4 * MiB)
    assert served >= 4 * MiB, \
        'only %d bytes served from prefetch memory: the case needs a ' \
        'reader that prefetched' % served


@pytest.mark.parametrize('via', ['smb', 'fuse'])
def test_max_age_bound(stack, tmpname, via):
    """Inside max age (2 s on glusterfs2-age) the reader is served the
    range prefetched before another client's write: the old data, from
    prefetch memory (counters); once max age has passed since the write,
    the rest of that range, prefetched before the write and not read yet,
    is the new data."""
    before = share_counters(stack, AGE_SHARE)
    r = Smb(stack, AGE_SHARE)
    r.write(tmpname, pattern(ord('A'), 32 * MiB))
    writer = _smb_writer(stack, 'glusterfs2', tmpname) if via == 'smb' \
        else _fuse_writer(stack, tmpname)
    f = r.ctx.open(r.url(tmpname), os.O_RDONLY)
    seq_read(f, 4 * MiB, 65536)          # prefetch now runs ahead
    time.sleep(0.05)
    writer(8 * MiB, NEW)
    t_write = time.monotonic()
    seq_read(f, 4 * MiB, 65536)          # 4..8 MiB
    inside = seq_read(f, MiB // 2, 65536)    # 8..8.5 MiB
    t_inside = time.monotonic() - t_write
    time.sleep(max(0.0, AGE + 0.3 - (time.monotonic() - t_write)))
    after = seq_read(f, MiB // 2, 65536)     # 8.5..9 MiB
    f.close()
    r.unlink(tmpname)
    r.close()
    assert t_inside < AGE - 0.5, \
        'the reader took %.1f s after the write: not inside the bound' % \
        t_inside
    assert inside == OLD[:MiB // 2], \
        'the range was not served from prefetch memory'
    assert after == NEW[MiB // 2:], 'the write is not seen after max age'
    served = prefetch_served(stack, AGE_SHARE, before, 5 * MiB)
    assert served >= 5 * MiB, served


def test_strict_mode_lease_broken_by_write(stack, tmpname):
    """Strict mode: a reader holding a level II oplock is served
    prefetched data (counters); a second client's write breaks the
    oplock, and the reader's next read of a range prefetched before the
    write returns the new data."""
    w = Smb(stack, 'glusterfs2')
    w.write(tmpname, pattern(ord('A'), 32 * MiB))
    before = share_counters(stack, 'glusterfs2-strict')
    cl = Client(stack, 'glusterfs2-strict')
    cl.conn.quiet()
    fid = cl.conn.c.create(
        cl.conn.tid, tmpname, s3.FILE_READ_DATA | s3.FILE_READ_ATTRIBUTES |
        s3.SYNCHRONIZE, s3.FILE_SHARE_READ | s3.FILE_SHARE_WRITE |
        s3.FILE_SHARE_DELETE, s3.FILE_NON_DIRECTORY_FILE, s3.FILE_OPEN,
        s3.FILE_ATTRIBUTE_NORMAL, oplockLevel=s3.SMB2_OPLOCK_LEVEL_II)

    def read(off, n):
        out = b''
        while len(out) < n:
            st, b = cl.read(fid, off + len(out), 65536)
            assert st == 0 and b, (off + len(out), st)
            out += b
        return out
    assert read(0, 4 * MiB) == pattern(ord('A'), 4 * MiB)
    time.sleep(0.05)
    _smb_writer(stack, 'glusterfs2', tmpname)(8 * MiB, NEW)
    time.sleep(0.3)     # the break reaches the reader's smbd process
    read(4 * MiB, 4 * MiB)
    got = read(8 * MiB, MiB)
    cl.close(fid)
    cl.drop()
    w.unlink(tmpname)
    w.close()
    assert got == NEW, 'stale prefetched data served after the break'
    served = prefetch_served(stack, 'glusterfs2-strict', before, MiB)
    assert served >= MiB, \
        'only %d bytes served from prefetch under the oplock' % served


def test_strict_mode_never_stale(stack, tmpname):
    """Strict mode without a lease: no prefetched data is served, so a
    write elsewhere is seen at once."""
    got = _stream_then_check('glusterfs2-strict',
                             _smb_writer(stack, 'glusterfs2', tmpname),
                             stack, tmpname, 0, need_prefetch=False)
    assert got == NEW
    got = _stream_then_check('glusterfs2-strict',
                             _fuse_writer(stack, tmpname),
                             stack, tmpname, 0, need_prefetch=False)
    assert got == NEW


def _set_cache_invalidation(stack, value):
    subprocess.run(['gluster', '--mode=script', 'volume', 'set',
                    stack['GLUSTER_VOLUME'], 'features.cache-invalidation',
                    value], check=True, stdout=subprocess.DEVNULL)
    # let the bricks and the clients take the new graph options
    time.sleep(2)


def test_fuse_writer_seen_through_upcall(stack, tmpname):
    """Share glusterfs2-longage keeps prefetched data up to 60 s.  Without
    upcalls a FUSE write 0.5 s earlier is not seen yet (the documented age
    bound, and proof that the range was prefetched); with
    features.cache-invalidation on, Gluster's upcall drops the data and the
    reader sees the write."""
    try:
        _set_cache_invalidation(stack, 'off')
        got = _stream_then_check('glusterfs2-longage',
                                 _fuse_writer(stack, tmpname),
                                 stack, tmpname, 0.5)
        assert got == OLD, 'the range was not prefetched: test is void'
        _set_cache_invalidation(stack, 'on')
        for _ in range(2):
            got = _stream_then_check('glusterfs2-longage',
                                     _fuse_writer(stack, tmpname),
                                     stack, tmpname, 0.5)
            assert got == NEW
        # another smbd process as the writer: same
        got = _stream_then_check('glusterfs2-longage',
                                 _smb_writer(stack, 'glusterfs2', tmpname),
                                 stack, tmpname, 0.5)
        assert got == NEW
    finally:
        _set_cache_invalidation(stack, 'off')


# -- reads that wait for prefetched data ------------------------------------
#
# A client sends sequential reads without waiting for the answers
# (test/tools/smb2q's SMB2 connection), so that the third read waits for a
# prefetch chunk still in flight, then changes the file through a second
# handle on the same connection (the same smbd process, the same prefetch
# state).  Gluster's debug/delay-gen translator holds every read on the
# bricks for BRICK_FOP_DELAY seconds (conftest.py's slow_reads), so the
# chunk is still in flight when the change arrives.  The waiting read must
# be answered, with the file's data, and both handles must close.

KiB = 1 << 10
SIZE = 4 * MiB
REQ = 64 * KiB
ANSWER_BOUND = 20.0      # seconds: far more than two delayed reads


def settled_counters(stack, share, before, key, want, bound=30):
    """The share's counters once key grew by at least want (the smbd
    that served the connection merges them when it ends), or as they are
    after bound seconds."""
    deadline = time.monotonic() + bound
    while True:
        now = share_counters(stack, share)
        if (now.get(key, 0) - before.get(key, 0) >= want or
                time.monotonic() > deadline):
            return now
        time.sleep(0.5)


def write_pattern(stack, name, pattern):
    path = os.path.join(stack['FUSE_MOUNT'], name)
    deadline = time.monotonic() + 30
    while True:
        try:
            with open(path, 'wb') as f:
                f.write(pattern.generate(0, SIZE))
            break
        except OSError:
            # the FUSE client may still be reconnecting after a restart
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    shutil.chown(path, stack['SMB_USER'])


def _change(kind, conn, fid, pattern):
    """A packet that changes the file through fid without changing the
    bytes of [0, 2 MiB) the reads ask for, or None after a same-bytes
    write."""
    if kind == 'truncate':
        return set_info_packet(conn, fid, FILE_END_OF_FILE_INFORMATION,
                               struct.pack('<Q', SIZE + MiB))
    if kind == 'allocation':
        # smaller than the file: smbd truncates to it
        return set_info_packet(conn, fid, FILE_ALLOCATION_INFORMATION,
                               struct.pack('<Q', 2 * MiB))
    if kind == 'zero-data':
        return zero_data_packet(conn, fid, 3 * MiB, SIZE)
    if kind == 'strict-read':
        # strict mode, a handle without an oplock: prefetched data of the
        # file may not be served, so it is all dropped
        return conn.read_packet(fid, 3 * MiB, REQ)
    if kind == 'write':
        # the same bytes over everything the reads can have prefetched
        # (the first window: 1.25 MiB)
        return conn.write_packet(fid, 0, pattern.get(0, 2 * MiB))
    raise ValueError(kind)


class TestPrefetchWaiters:
    """Brick reads held BRICK_FOP_DELAY s (conftest.py's slow_reads)."""

    @pytest.mark.parametrize('kind', ['truncate', 'allocation', 'zero-data',
                                      'write', 'strict-read'])
    def test_prefetch_waiter_answered_after_change(self, stack, tmpname,
                                                   slow_reads, kind):
        """Three sequential reads sent at once: the second confirms the
        stream and sends the first prefetch window, the third waits for it.
        A change through another handle drops that window while it is in
        flight: the third read must still be answered with the file's data
        (a read answered from Gluster, after the change or racing it), and
        close must not wait forever.  Before the fix the third read was
        never answered: the dropped chunks were orphaned and their
        completions woke no waiter."""
        pattern = smb2q.Pattern(tmpname)
        write_pattern(stack, tmpname, pattern)
        share = 'glusterfs2-strict' if kind == 'strict-read' else 'glusterfs2'
        before = share_counters(stack, share)
        conn = connect(stack, share, timeout=ANSWER_BOUND)
        try:
            if kind == 'strict-read':
                # the reader holds a level II oplock (strict mode prefetches
                # only then: the counters below show it did), the other
                # handle none
                fb = conn.open(tmpname, False, False)
                conn.quiet()
                fa = conn.c.create(conn.tid, tmpname, s3.FILE_READ_DATA |
                                   s3.FILE_READ_ATTRIBUTES | s3.SYNCHRONIZE,
                                   s3.FILE_SHARE_READ | s3.FILE_SHARE_WRITE |
                                   s3.FILE_SHARE_DELETE,
                                   s3.FILE_NON_DIRECTORY_FILE, s3.FILE_OPEN,
                                   s3.FILE_ATTRIBUTE_NORMAL,
                                   oplockLevel=s3.SMB2_OPLOCK_LEVEL_II)
            else:
                fa = conn.open(tmpname, False, False)
                fb = conn.open(tmpname, True, False)
            conn.ensure_credits(64)
            reads = {}
            for i in range(3):
                mid = conn.send(conn.read_packet(fa, i * REQ, REQ), 1)
                conn.pending[mid] = {}
                reads[mid] = i * REQ
            time.sleep(0.2)     # the third read is waiting now
            pkt = _change(kind, conn, fb, pattern)
            mid = conn.send(pkt, conn.charge(len(pkt.body)))
            conn.pending[mid] = {}
            got = collect(conn, list(reads) + [mid], ANSWER_BOUND)
            status = got[mid][0]
            assert status == smb2q.STATUS_SUCCESS, (kind,
                                                    smb2q.status_str(status))
            if kind == 'strict-read':
                assert read_data(got[mid]) == pattern.get(3 * MiB, REQ)
            for m, off in reads.items():
                data = read_data(got[m])
                assert data == pattern.get(off, REQ), (
                    'READ at %d: wrong data' % off)
            mids = [conn.send(close_packet(conn, f), 1) for f in (fa, fb)]
            got = collect(conn, mids, ANSWER_BOUND)
            assert all(r[0] == smb2q.STATUS_SUCCESS for r in got.values())
        finally:
            conn.drop()
            os.unlink(os.path.join(stack['FUSE_MOUNT'], tmpname))
        # the test is void unless a window was in flight and was dropped
        after = settled_counters(stack, share, before, 'prefetch_unused',
                                 REQ)
        for key in ('prefetch_bytes', 'prefetch_unused'):
            assert after[key] - before.get(key, 0) >= REQ, key


# -- a share without prefetch beside one with it, one smbd process ---------

def test_write_without_prefetch_drops_prefetched_data(stack, tmpname,
                                                      two_volume_smbd):
    """One connection, one smbd process: a reader streams a file through
    [v1long] (prefetch kept 60 s), a writer changes a range ahead of it
    through [v1np] (prefetch off) on the same volume, then the reader
    reads that range: it must see the write.  Before the fix a share
    without prefetch never looked at the process's prefetched data, so
    the reader got the bytes prefetched before the write."""
    pattern = smb2q.Pattern(tmpname)
    write_pattern(stack, tmpname, pattern)
    srv = two_volume_smbd
    conn = connect(srv.client_env(), 'v1long')
    new = b'N' * REQ
    try:
        tid_np = conn.c.connectTree('v1np')
        fr = open_file(conn, conn.tid, tmpname, False)
        fw = open_file(conn, tid_np, tmpname, True)
        conn.ensure_credits(64)
        for off in range(0, 512 * KiB, REQ):
            assert read_on(conn, conn.tid, fr, off, REQ) == \
                pattern.get(off, REQ)
        # the first windows reach past 1 MiB: [768 KiB, 832 KiB) is
        # prefetched by now
        write_on(conn, tid_np, fw, 768 * KiB, new)
        got = read_on(conn, conn.tid, fr, 768 * KiB, REQ)
        assert got == new, 'the reader got the data prefetched before a ' \
            'write through a share without prefetch'
        # control, the same through the prefetching share itself
        fw2 = open_file(conn, conn.tid, tmpname, True)
        write_on(conn, conn.tid, fw2, 832 * KiB, new)
        assert read_on(conn, conn.tid, fr, 832 * KiB, REQ) == new
    finally:
        conn.drop()
        os.unlink(os.path.join(stack['FUSE_MOUNT'], tmpname))
