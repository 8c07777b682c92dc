"""The write cache makes its deferred Gluster calls as the writer's user.

With glusterfs2:write cache = yes, a write acknowledged once queued goes
to Gluster later: from the completion of an earlier write, from a drain
that another user's open starts, and a read or FLUSH that waited for
queued writes is sent from a completion too.  gfapi takes a call's uid,
gid and groups from smbd's main thread when the call is submitted; by
then a request of another user may have switched smbd to that user.
GlusterFS 10 checks no permission on an open fd's reads and writes, so a
wrong identity changes no answer; what is checked here is the identity
each call reaches the bricks with: at log level TRACE
(diagnostics.brick-log-level) a brick writes, for every request it
receives, its program and procedure ("received rpc-message (... Proc:
N)"), then the RPC credentials ("Auth Info: pid: P, uid: U, ...") that
the frame on the brick gets: 12 READ, 13 WRITE, 16 FSYNC of the
GlusterFS 4.x program, from the pid of the smbd serving the session.

A private smbd serves the stack's volume as [wca] (write cache, prefetch
off) and [wcb], the same with `force user = SMB_USER2`: one session, two
tree connects, two identities in one smbd process.  Gluster's delay-gen
translator holds every brick WRITE for DELAY_MS, so that a write is still
in flight (and the next one queued behind it) when a request on [wcb]
leaves smbd as SMB_USER2.  Every READ, WRITE and FSYNC made for the
handle opened on [wca] must carry SMB_USER's uid.
"""

import os
import re
import struct
import subprocess
import sys
import time

import pytest

from conftest import TOP, fresh, lease_key
from gf2_bricks import delayed_brick_fops
from gf2_private_smbd import PrivateSmbd

sys.path.insert(0, os.path.join(TOP, 'test', 'tools'))
try:
    import smb2q
except ImportError:                                     # pragma: no cover
    smb2q = None

KiB = 1024
DELAY_MS = 1500

PROC_READ = 12
PROC_WRITE = 13
PROC_FSYNC = 16

RECEIVED = re.compile(r'received rpc-message \(XID: \S+, Ver: \d+, '
                      r'Program: (\d+), ProgVers: \d+, Proc: (\d+)\)')
AUTH = re.compile(r'Auth Info: pid: (-?\d+), uid: (\d+), gid: (\d+)')
FOP_PROGRAM = 1298437               # GlusterFS 4.x, on the wire


@pytest.fixture(scope='module', autouse=True)
def need_impacket():
    if smb2q is None or smb2q.smb3 is None:
        pytest.skip('python3-impacket is not installed')


@pytest.fixture(scope='module')
def traced_slow_writes(stack):
    """delay-gen holds every brick WRITE for DELAY_MS (taken when the
    bricks start again), and the bricks log every call at TRACE."""
    yield from delayed_brick_fops(stack, 'WRITE', DELAY_MS, also=[
        ('diagnostics.brick-log-level', 'TRACE')])


@pytest.fixture(scope='module')
def srv(stack, traced_slow_writes):
    # the port slot of test_identity_async.py: the two never run at once
    s = PrivateSmbd('identasync', stack)
    share = [('vfs objects', 'glusterfs2'), ('path', '/'),
             ('glusterfs2:volume', stack['GLUSTER_VOLUME']),
             ('glusterfs2:volfile_server', stack.get('GLUSTER_HOST',
                                                     'localhost')),
             ('glusterfs2:logfile', os.path.join(s.dir, 'gfapi.log')),
             ('glusterfs2:prefetch', 'no'),
             ('glusterfs2:write cache', 'yes'),
             ('kernel share modes', 'no'), ('kernel oplocks', 'no'),
             ('posix locking', 'no'), ('read only', 'no')]
    s.write_conf([], [
        ('wca', share),
        ('wcb', share + [('force user', stack['SMB_USER2'])])])
    s.start()
    try:
        yield s
    finally:
        s.stop()


def uid_of(user):
    return int(subprocess.run(['id', '-u', user], stdout=subprocess.PIPE,
                              universal_newlines=True,
                              check=True).stdout)


def brick_logs(stack):
    """The bricks' log files (glusterd names them by brick path)."""
    return ['/var/log/glusterfs/bricks/%s.log' %
            b.strip('/').replace('/', '-')
            for b in stack['BRICK_DIRS'].split()]


def log_mark(stack):
    return {p: os.path.getsize(p) for p in brick_logs(stack)}


def calls_since(stack, mark, pid):
    """[(procedure, uid)] of the file operations the bricks received from
    process pid since mark: the bricks' trace log writes each request's
    procedure ("received rpc-message (... Proc: N)"), then the
    credentials it came with ("Auth Info: pid: P, uid: U, ...")."""
    out = []
    for p in brick_logs(stack):
        with open(p, errors='replace') as f:
            f.seek(mark.get(p, 0))
            text = f.read()
        proc = None
        for line in text.splitlines():
            m = RECEIVED.search(line)
            if m:
                proc = int(m.group(2)) \
                    if int(m.group(1)) == FOP_PROGRAM else None
                continue
            m = AUTH.search(line)
            if m and proc is not None:
                if int(m.group(1)) == pid:
                    out.append((proc, int(m.group(2))))
                proc = None
    return out


def wait_calls(stack, mark, pid, proc, n, timeout=DELAY_MS * 8 / 1000):
    """The calls since mark once `n` of procedure `proc` are among them
    (or timeout passed)."""
    deadline = time.monotonic() + timeout
    while True:
        calls = calls_since(stack, mark, pid)
        if sum(1 for p, _u in calls if p == proc) >= n or \
                time.monotonic() > deadline:
            return calls
        time.sleep(0.1)


class Session:
    """One session: the writer's tree connect [wca] and [wcb] of
    SMB_USER2, requests sent without waiting for their answers."""

    def __init__(self, stack, s):
        self.conn = smb2q.Conn(stack['SMB_HOST'], s.port,
                               stack['SMB_USER'], stack['SMB_PASS'], 'wca',
                               timeout=120)
        self.conn.quiet()
        self.tid_b = self.conn.c.connectTree('wcb')
        self.got = {}

    def send(self, packet):
        c = self.conn
        c.ensure_credits(4)
        mid = c.send(packet, 1)
        c.pending[mid] = {'what': 'request'}
        return mid

    def other_user(self):
        """A request on [wcb] (a FLUSH of no open file): smbd switches to
        SMB_USER2 to serve it."""
        return self.send(smb2q.RawPacket(
            smb2q.s3.SMB2_FLUSH, self.tid_b,
            struct.pack('<HHI16s', 24, 0, 0, b'\xff' * 16)))

    def answer(self, mid):
        """(status, response bytes) of request mid."""
        c = self.conn
        while mid not in self.got:
            for rmid, status, frame, start, end in c.recv_responses():
                rq = c.pending.pop(rmid, None)
                if rq is not None and rq.get('what') == 'break_ack':
                    c._break_ack_done(rq, status)
                    continue
                self.got[rmid] = (status, bytes(frame[start:end]))
        return self.got.pop(mid)


def open_queued(sess, name, pat):
    """The file opened on [wca] under an RWH lease, 64 KiB on the bricks,
    then one write sent to the (slow) bricks and a second one queued
    behind it, both acknowledged."""
    c = sess.conn
    h = c.open(name, write=True, create=True, lease_key=lease_key())
    assert c.granted == 'lease RWH'
    assert c.write(h, 0, pat.get(0, 64 * KiB)) == 0
    assert c.flush(h) == 0
    assert c.write(h, 64 * KiB, pat.get(64 * KiB, 64 * KiB)) == 0
    assert c.write(h, 128 * KiB, pat.get(128 * KiB, 64 * KiB)) == 0
    return h


def assert_as(calls, proc, uid, least, what):
    mine = [u for p, u in calls if p == proc]
    assert len(mine) >= least, \
        '%s: %d calls of procedure %d in gfapi\'s log, expected %d or ' \
        'more: %r' % (what, len(mine), proc, least, calls)
    assert set(mine) == {uid}, \
        '%s: sent with uids %r, expected only the writer\'s %d' % (
            what, sorted(set(mine)), uid)


def test_queued_write_sent_from_a_completion(stack, srv):
    """The queued write goes when the write ahead of it lands, after a
    request of SMB_USER2 came in."""
    name = 'wc-ident-completion.bin'
    fresh(stack, name)
    user = uid_of(stack['SMB_USER'])
    sess = Session(stack, srv)
    pat = smb2q.Pattern('ident-completion')
    mark = log_mark(stack)
    h = open_queued(sess, name, pat)
    sess.answer(sess.other_user())
    calls = wait_calls(stack, mark, sess.conn.server_pid, PROC_WRITE,
                       3)
    sess.conn.close(h)
    sess.conn.drop()
    assert_as(calls, PROC_WRITE, user, 3, 'writes')


def test_read_that_waited_for_queued_writes(stack, srv):
    """A READ on [wca] waits for the queued writes; they land after a
    request of SMB_USER2 came in, and the read is sent then."""
    name = 'wc-ident-read.bin'
    fresh(stack, name)
    user = uid_of(stack['SMB_USER'])
    sess = Session(stack, srv)
    pat = smb2q.Pattern('ident-read')
    h = open_queued(sess, name, pat)
    mark = log_mark(stack)
    rmid = sess.send(sess.conn.read_packet(h, 64 * KiB, 64 * KiB))
    sess.answer(sess.other_user())
    status, rsp = sess.answer(rmid)
    calls = calls_since(stack, mark, sess.conn.server_pid)
    sess.conn.close(h)
    sess.conn.drop()
    assert status == 0, smb2q.status_str(status)
    doff, _r, dlen = struct.unpack_from('<BBI', rsp, 64 + 2)
    assert rsp[doff:doff + dlen] == pat.get(64 * KiB, 64 * KiB)
    assert_as(calls, PROC_READ, user, 1, 'the read')
    assert_as(calls, PROC_WRITE, user, 1, 'the queued write')


def test_flush_that_waited_for_queued_writes(stack, srv):
    """A FLUSH on [wca] waits for the queued writes, then sends Gluster's
    fsync: after a request of SMB_USER2 came in."""
    name = 'wc-ident-flush.bin'
    fresh(stack, name)
    user = uid_of(stack['SMB_USER'])
    sess = Session(stack, srv)
    pat = smb2q.Pattern('ident-flush')
    h = open_queued(sess, name, pat)
    mark = log_mark(stack)
    fmid = sess.send(sess.conn.flush_packet(h))
    sess.answer(sess.other_user())
    status, _rsp = sess.answer(fmid)
    calls = calls_since(stack, mark, sess.conn.server_pid)
    sess.conn.close(h)
    sess.conn.drop()
    assert status == 0, smb2q.status_str(status)
    assert_as(calls, PROC_FSYNC, user, 1, 'the fsync')
    assert_as(calls, PROC_WRITE, user, 1, 'the queued write')


def test_drain_started_by_another_users_open(stack, srv):
    """SMB_USER2 opens the file on [wcb] while the writer's bytes are
    queued: the open drains them first, under SMB_USER2's identity; the
    writes still go as the writer."""
    name = 'wc-ident-open.bin'
    fresh(stack, name)
    user = uid_of(stack['SMB_USER'])
    sess = Session(stack, srv)
    pat = smb2q.Pattern('ident-open')
    h = open_queued(sess, name, pat)
    mark = log_mark(stack)
    c = sess.conn
    body = smb2q.CREATE_REQ.pack(
        57, 0, 0, 2, 0, 0,
        smb2q.s3.FILE_READ_DATA | smb2q.s3.FILE_READ_ATTRIBUTES |
        smb2q.s3.SYNCHRONIZE, smb2q.s3.FILE_ATTRIBUTE_NORMAL,
        smb2q.s3.FILE_SHARE_READ | smb2q.s3.FILE_SHARE_WRITE |
        smb2q.s3.FILE_SHARE_DELETE, smb2q.s3.FILE_OPEN,
        smb2q.s3.FILE_NON_DIRECTORY_FILE, 64 + 56,
        len(name.encode('utf-16le')), 0, 0) + name.encode('utf-16le')
    omid = sess.send(smb2q.RawPacket(smb2q.s3.SMB2_CREATE, sess.tid_b,
                                     body))
    status, rsp = sess.answer(omid)
    calls = calls_since(stack, mark, sess.conn.server_pid)
    if status == 0:
        fid_b = rsp[64 + 64:64 + 80]
        sess.answer(sess.send(smb2q.RawPacket(
            smb2q.s3.SMB2_CLOSE, sess.tid_b,
            struct.pack('<HHI16s', 24, 0, 0, fid_b))))
    c.close(h)
    c.drop()
    assert status == 0, smb2q.status_str(status)
    assert_as(calls, PROC_WRITE, user, 1, 'the drained write')


# -- a reader beside a steady writer -------------------------------------

WRITER_DEPTH = 4
WRITER_BOUND = 40 * WRITER_DEPTH


def test_read_beside_a_steady_writer(stack, srv):
    """Handle A writes steadily under an RWH lease (WRITER_DEPTH writes
    of 64 KiB always outstanding, each next one sent when one is
    answered); a READ on handle B of the same file, in the same smbd
    process, waits only for the writes acknowledged before it came: it
    is answered while the writer has had at most WRITER_BOUND more
    answers, not after the writer stops."""
    name = 'wc-steady.bin'
    fresh(stack, name)
    sess = Session(stack, srv)
    c = sess.conn
    key = lease_key()
    pat = smb2q.Pattern('steady')
    a = c.open(name, write=True, create=True, lease_key=key)
    assert c.granted == 'lease RWH'
    assert c.write(a, 0, pat.get(0, 64 * KiB)) == 0
    assert c.flush(a) == 0
    b = c.open(name, write=False, create=False, lease_key=key)
    c.ensure_credits(2 * WRITER_DEPTH + 4)
    writes = set()
    off = 64 * KiB
    for _ in range(WRITER_DEPTH):
        writes.add(sess.send(c.write_packet(a, off,
                                            pat.get(off, 64 * KiB))))
        off += 64 * KiB
    rmid = sess.send(c.read_packet(b, 0, 64 * KiB))
    answered = 0
    read = None
    while read is None and answered < WRITER_BOUND:
        for mid, status, frame, start, end in c.recv_responses():
            rq = c.pending.pop(mid, None)
            if rq is not None and rq.get('what') == 'break_ack':
                c._break_ack_done(rq, status)
                continue
            if mid == rmid:
                read = (status, bytes(frame[start:end]))
                continue
            assert mid in writes, 'answer to unknown message %d' % mid
            assert status == 0, smb2q.status_str(status)
            writes.discard(mid)
            answered += 1
            writes.add(sess.send(c.write_packet(a, off,
                                                pat.get(off, 64 * KiB))))
            off += 64 * KiB
    later = read is None
    # the writer stops: what is outstanding is answered
    while writes or read is None:
        for mid, status, frame, start, end in c.recv_responses():
            c.pending.pop(mid, None)
            if mid == rmid:
                read = (status, bytes(frame[start:end]))
            writes.discard(mid)
    c.close(b)
    c.close(a)
    c.drop()
    assert not later, \
        'the read on handle B was answered only after the writer on ' \
        'handle A had %d answers and stopped' % answered
    assert read[0] == 0, smb2q.status_str(read[0])
    doff, _r, dlen = struct.unpack_from('<BBI', read[1], 64 + 2)
    assert read[1][doff:doff + dlen] == pat.get(0, 64 * KiB)
