"""Sequential-read prefetch: correct data, and coherence within the
documented bounds.

glusterfs2 share: prefetch on, coherence "age", max age 250 ms (defaults).
glusterfs2-strict share: coherence "strict" (prefetched data only under a
read lease or oplock; python3-smbc takes neither, so reads go to Gluster).
glusterfs2-longage share: max age 60 s, for the upcall test.
"""

import hashlib
import os
import subprocess
import time

import pytest

from conftest import Smb, sha256

MiB = 1 << 20
MAX_AGE = 0.250          # glusterfs2:prefetch max age default, seconds


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
def test_sequential_reads_checksum(smb, tmpname, block):
    c = smb('glusterfs2')
    data = os.urandom(40 * MiB + 12345)
    c.write(tmpname, data)
    f = c.ctx.open(c.url(tmpname), os.O_RDONLY)
    got = seq_read(f, len(data) + 3 * MiB, block)
    assert len(got) == len(data)
    assert sha256(got) == sha256(data)
    # past EOF: nothing
    assert f.read(block) == b''
    f.close()
    c.unlink(tmpname)


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


def _stream_then_check(reader_share, writer, stack, tmpname, wait):
    """Reader streams the first 4 MiB, a writer changes [8, 9) MiB, then the
    reader continues through it; returns the bytes it read there."""
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
    overlapping prefetched data before it is sent: seen at once."""
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


def test_strict_mode_never_stale(stack, tmpname):
    """Strict mode without a lease: no prefetched data is served, so a
    write elsewhere is seen at once."""
    got = _stream_then_check('glusterfs2-strict',
                             _smb_writer(stack, 'glusterfs2', tmpname),
                             stack, tmpname, 0)
    assert got == NEW
    got = _stream_then_check('glusterfs2-strict',
                             _fuse_writer(stack, tmpname),
                             stack, tmpname, 0)
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
