"""Closing a copy-chunk's source while the copy is under way.

The module's copy-chunk (FSCTL_SRV_COPYCHUNK_WRITE) reads the source and
writes the destination piece by piece, asynchronously, holding the source
handle (found by its resume key) across the steps.  A client may close
the source while that runs: the close must wait for the copy, as smbd's
close waits for the reads and writes in flight on a handle, and neither
leave the copy with a handle that is gone nor free a file whose prefetch
still has a reader waiting.

A private smbd (the stack's port plus its own offset) serves the
stack's volume as [cc] (glusterfs2 with prefetch, its default).  Gluster's debug/delay-gen
translator delays every brick READ by 1 s, so that a copy of 16 chunks of
64 KiB takes seconds, and the first chunk's read waits for the prefetch
it starts.  The client sends the copy, then at once a CLOSE of
the source; then it checks that the smbd child is alive and answers, the
copy's answer (all 16 chunks, or OBJECT_NAME_NOT_FOUND for the chunks
after the close: smbd looks the source's resume key up again for every
chunk, and a closed handle's key is gone), the CLOSE's, that no smbd
logged a PANIC, that the destination holds whole chunks of the source,
and that the CLOSE was answered only once the copy had no piece in
flight on the source any more: the destination's size on its brick when
the CLOSE is answered is its final size.

(Prefetch's assertion that no read waits on a file whose last handle
goes, which a close in the middle of a read waiting for prefetched data
would trip, is not reached here: with every brick read delayed alike,
the copy's reads find no prefetched data in flight and go to Gluster
directly.  The wait that the close now makes covers such a read too.)
"""

import os
import struct
import time
import uuid

import pytest

from gf2_private_smbd import PrivateSmbd
from gf2_smb2 import (Client, FSCTL_SRV_COPYCHUNK_WRITE, STATUS,
                      copy_source_and_key, ioctl_packet, s3, smb2q)

CHUNK = 64 * 1024
CLOSE_AFTER_S = 1.5     # inside the second chunk's read
NCHUNKS = 16
NOT_FOUND = STATUS['STATUS_OBJECT_NAME_NOT_FOUND']


@pytest.fixture(scope='module')
def srv(stack, slow_reads_1s):
    s = PrivateSmbd('copychunkclose', stack)
    s.write_conf([], [
        ('cc', s.gf2_share([('posix locking', 'no')]))])
    for env in s.serving():
        yield env, s


def collect(c, want, timeout=60):
    got = {}
    deadline = time.time() + timeout
    while want - set(got):
        assert time.time() < deadline, 'no answer to %s' % (
            want - set(got))
        for mid, status, frame, start, end in c.recv_responses():
            c.pending.pop(mid, None)
            got[mid] = (status, bytes(frame[start:end]))
    return got


def brick_size(env, name):
    """The file's size on its brick (no client's cache in between)."""
    for b in env['BRICK_DIRS'].split():
        p = os.path.join(b, name)
        if os.path.exists(p):
            return os.stat(p).st_size
    return None


def test_close_source_mid_copy(srv):
    env, s = srv
    tag = uuid.uuid4().hex[:10]
    src, dst = 'cc-src-%s.dat' % tag, 'cc-dst-%s.dat' % tag
    data = os.urandom(CHUNK * NCHUNKS)
    with open(os.path.join(env['FUSE_MOUNT'], src), 'wb') as f:
        f.write(data)
    os.chmod(os.path.join(env['FUSE_MOUNT'], src), 0o666)
    try:
        cl = Client(env, 'cc')
        sfid, dfid, key = copy_source_and_key(cl, src, dst)
        chunks = b''.join(struct.pack('<QQII', i * CHUNK, i * CHUNK,
                                      CHUNK, 0) for i in range(NCHUNKS))
        blob = key + struct.pack('<II', NCHUNKS, 0) + chunks
        c = cl.conn
        c.ensure_credits(8)
        cmid = c.send(ioctl_packet(c.tid, dfid, FSCTL_SRV_COPYCHUNK_WRITE,
                                   blob, 12), 1)
        c.pending[cmid] = {'what': 'copychunk'}
        time.sleep(CLOSE_AFTER_S)
        xmid = c.send(smb2q.RawPacket(
            s3.SMB2_CLOSE, c.tid, struct.pack('<HHI16s', 24, 0, 0, sfid)),
            1)
        c.pending[xmid] = {'what': 'close'}
        got = {}
        # the destination's size on its brick when the CLOSE is answered
        at_close = None
        while {cmid, xmid} - set(got):
            for mid, status, frame, start, end in c.recv_responses():
                c.pending.pop(mid, None)
                got[mid] = (status, bytes(frame[start:end]))
                if mid == xmid:
                    at_close = brick_size(env, dst)
        cl.alive()
        cst, crsp = got[cmid]
        xst, _ = got[xmid]
        assert xst == 0, 'close: %s' % smb2q.status_name(xst)
        # smbd copies chunk after chunk, each looking the resume key up
        # again: once the source is closed its key is gone, and the
        # chunks after it fail as they fail on every backend
        assert cst in (0, NOT_FOUND), 'copy: %s' % smb2q.status_name(cst)
        if cst == 0:
            ooff, olen = struct.unpack_from('<II', crsp, 64 + 32)
            written = struct.unpack_from('<III', crsp, ooff)
            assert written == (NCHUNKS, 0, CHUNK * NCHUNKS), written
        tbl = c.c._Session['OpenTable']
        c.c.GlobalFileTable.pop(tbl[sfid]['FileName'], None)
        del tbl[sfid]
        cl.close(dfid)
        cl.drop()
        with open(os.path.join(env['FUSE_MOUNT'], dst), 'rb') as f:
            copied = f.read()
        # the close waited for the piece the copy had in flight: nothing
        # was written to the destination after the source was closed
        assert at_close == len(copied), \
            'the source was closed while the copy still worked on it: ' \
            '%d bytes copied when the close was answered, %d in the end' % (
                at_close, len(copied))
        # what was copied is the source's, whole chunks of it
        assert len(copied) % CHUNK == 0 and copied == data[:len(copied)]
        if cst == 0:
            assert copied == data
        logs = s.logs()
        assert 'PANIC' not in logs and 'INTERNAL ERROR' not in logs, logs
    finally:
        for n in (src, dst):
            try:
                os.unlink(os.path.join(env['FUSE_MOUNT'], n))
            except OSError:
                pass
