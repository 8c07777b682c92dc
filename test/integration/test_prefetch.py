"""Sequential-read prefetch: correct data, and coherence within the
documented bounds.

glusterfs2 share: prefetch on, coherence "age", max age 250 ms (defaults).
glusterfs2-strict share: coherence "strict" (prefetched data only under a
read lease or oplock; python3-smbc takes neither, so reads go to Gluster).
glusterfs2-age share: max age 2 s, long enough to see inside the bound
that a range was prefetched (the old data is served, and the counters
of tools/glusterfs2-stats show bytes served from prefetch memory).
glusterfs2-longage share: max age 60 s, for the upcall test.
"""

import hashlib
import json
import os
import subprocess
import time

import pytest

from conftest import Smb, TOP, sha256
from test_bad_requests import Client, s3

MiB = 1 << 20
MAX_AGE = 0.250          # glusterfs2:prefetch max age default, seconds
AGE_SHARE = 'glusterfs2-age'
AGE = 2.0                # its glusterfs2:prefetch max age, seconds
TOOL = os.path.join(TOP, 'tools', 'glusterfs2-stats')


def counters(stack, share):
    """The share's counters (tools/glusterfs2-stats --json)."""
    p = subprocess.run([TOOL, '-s', stack['SMB_CONF'], '--share', share,
                        '--json'], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)['shares'].get(share, {})


def prefetch_served(stack, share, before, want, timeout=40):
    """Bytes served from prefetch memory on SHARE since BEFORE, once they
    reach WANT (the smbd processes merge their counters when their tree
    connect ends) or TIMEOUT has passed."""
    deadline = time.time() + timeout
    while True:
        n = counters(stack, share).get('read_bytes_prefetch', 0) - \
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
    before = counters(stack, reader_share)
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
    before = counters(stack, 'glusterfs2')
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
    before = counters(stack, AGE_SHARE)
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
    before = counters(stack, 'glusterfs2-strict')
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
