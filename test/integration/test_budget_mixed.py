"""The write cache and prefetch stay within one memory budget, with writers
and readers at work together in one smbd process.

`glusterfs2:prefetch max memory` is one budget per smbd process for
prefetched data and the write cache's queued writes together (the manual
page).  A private smbd (its port the stack's plus its own offset,
gf2_private_smbd.PORT_SLOTS) serves one share on the stack's volume with
`glusterfs2:write cache = yes`, prefetch on and a budget of CAP (8 MiB).
One client connection (test/tools/smb2q's Conn: one TCP connection, so one
smbd process and one budget) opens WRITERS files with an RWH lease each and
READERS files without one, and drives them all at once over that
connection: every writer streams sequential 64 KiB writes, WRITE_DEPTH in
flight, which the write cache acknowledges once queued and gathers into
1 MiB Gluster writes; every reader reads its file sequentially in 64 KiB
requests, READ_DEPTH in flight and at most READ_RATE, which prefetch reads
ahead of (with `prefetch max age` MAX_AGE_MS its windows may reach about
a second of that rate), pass after pass until the writers are done.  The
bricks delay every WRITE by conftest.py's BRICK_DELAY_MS
(delay-gen), so queued bytes pile up: the writers alone ask for more
than the budget (each handle keeps up to 4 gathers in flight and one
gathering), and so do the readers' windows.

While they run, tools/glusterfs2-stats --json is sampled; the module
reports, per share, what the process's budget holds now (mem_held, of
which the write cache's mem_held_wc) and the most it has held (mem_peak,
kept by the book at every change).  Asserted:

  - the budget: mem_peak <= CAP, and every sampled mem_held <= CAP;
  - the test is not void: mem_peak reached more than half of CAP, writes
    were acknowledged once queued (wc_writes) and reads were served from
    prefetch (read_bytes_prefetch), one sample saw prefetch and the write
    cache holding memory at the same time, and one smbd process served
    it all;
  - the data: every writer's file, read back through the FUSE mount, has
    the sha256 of the stream it wrote; every block a reader got is its
    file's (smb2q's pattern), and every pass's sha256 is the file's.

It fails when the budget is not enforced: with gf2_pfb_avail() answering
as if there were no cap, or with prefetch alone sizing its windows as if
there were none, the peak went far past CAP (the commit that added this
test says by how much).
"""

import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import threading
import time
import uuid

import pytest

from gf2_private_smbd import PrivateSmbd, sha256_file

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, 'test', 'tools'))

try:
    import smb2q
except ImportError:                                     # pragma: no cover
    smb2q = None

KiB = 1024
MiB = 1024 * KiB
CAP = 8 * MiB                   # glusterfs2:prefetch max memory
SHARE = 'budget'
WRITERS = 3
WRITE_SIZE = 16 * MiB           # each writer's file
WRITE_REQ = 64 * KiB
WRITE_DEPTH = 8
READERS = 3
READ_SIZE = 16 * MiB            # each reader's file
READ_REQ = 64 * KiB
READ_DEPTH = 2
READ_RATE = 4 * MiB             # each reader, bytes per second at most
MAX_AGE_MS = 2000               # glusterfs2:prefetch max age
POLL = 0.02                     # seconds a throttled loop waits for input
SAMPLE_EVERY = 0.25             # seconds between samples of the counters
TOOL = os.path.join(TOP, 'tools', 'glusterfs2-stats')


@pytest.fixture(scope='module', autouse=True)
def need_impacket():
    if smb2q is None or smb2q.smb3 is None:
        pytest.skip('python3-impacket is not installed')


@pytest.fixture(scope='module')
def srv(stack, slow_bricks):
    """The private smbd, started once the bricks are slowed down (they
    restart for it) so that its gfapi connects to the slow ones."""
    s = PrivateSmbd('budget-mixed', stack)
    share = [('vfs objects', 'glusterfs2'), ('path', '/'),
             ('glusterfs2:volume', stack['GLUSTER_VOLUME']),
             ('glusterfs2:volfile_server', stack.get('GLUSTER_HOST',
                                                     'localhost')),
             ('glusterfs2:logfile', os.path.join(s.dir,
                                                 'glusterfs2-%M.log')),
             ('glusterfs2:write cache', 'yes'),
             ('glusterfs2:prefetch', 'yes'),
             ('glusterfs2:prefetch max memory', '%dM' % (CAP // MiB)),
             ('glusterfs2:prefetch max age', str(MAX_AGE_MS)),
             ('kernel share modes', 'no'), ('kernel oplocks', 'no'),
             ('read only', 'no')]
    s.write_conf([], [(SHARE, share)])
    # counters of earlier runs go: mem_peak is the largest ever kept
    shutil.rmtree(stats_dir(s), ignore_errors=True)
    s.start()
    try:
        yield s
    finally:
        s.stop()


def stats_dir(srv):
    return os.path.join(srv.dir, 'lock', 'glusterfs2')


def counters(srv):
    """The share's counters as tools/glusterfs2-stats --json sums them
    (the private smbd's own lock directory)."""
    p = subprocess.run([TOOL, '--dir', stats_dir(srv), '--share', SHARE,
                        '--json'], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)['shares'].get(SHARE, {})


class Sampler(threading.Thread):
    """Reads the counters every SAMPLE_EVERY s until stopped."""

    def __init__(self, srv):
        super().__init__(daemon=True)
        self.srv = srv
        self.samples = []
        self.errors = []
        self.halt = threading.Event()

    def run(self):
        while not self.halt.is_set():
            try:
                self.samples.append(counters(self.srv))
            except BaseException as e:     # reported by the test
                self.errors.append(e)
                return
            self.halt.wait(SAMPLE_EVERY)


class Stream:
    """One file moved sequentially over the shared connection: a writer
    sends the pattern, a reader checks every block against it and, with
    loop, starts a new pass at the end of the file until told to stop."""

    def __init__(self, kind, fid, name, size, req, depth, pattern,
                 loop=False, rate=None):
        self.kind = kind
        self.fid = fid
        self.name = name
        self.size = size
        self.req = req
        self.depth = depth
        self.pattern = pattern
        self.loop = loop
        self.nxt = 0
        self.inflight = 0
        self.h = hashlib.sha256()
        self.hashed = 0             # reads: the pass hashed up to here
        self.early = {}             # reads: blocks completed beyond it
        self.passes = []            # reads: sha256 of every full pass
        self.stop = False
        self.rate = rate            # bytes per second at most, or None
        self.sent = 0
        self.t0 = None

    def done(self):
        if self.kind == 'write':
            return self.nxt >= self.size and self.inflight == 0
        return self.stop and self.inflight == 0 and self.nxt >= self.size

    def fill(self, conn):
        """Send requests until depth are in flight (or the rate would be
        passed); True if the rate held one back."""
        now = time.monotonic()
        if self.t0 is None:
            self.t0 = now
        while self.inflight < self.depth:
            if self.nxt >= self.size:
                if self.kind == 'write' or self.stop or self.inflight:
                    return False
                self.nxt = 0        # the next pass
            n = min(self.req, self.size - self.nxt)
            if self.rate and self.sent + n > self.rate * (now - self.t0):
                return True
            ch = conn.charge(n)
            if ch > conn.credits:
                return False
            if self.kind == 'write':
                data = self.pattern.get(self.nxt, n)
                self.h.update(data)
                pkt = conn.write_packet(self.fid, self.nxt, data)
            else:
                pkt = conn.read_packet(self.fid, self.nxt, n)
            mid = conn.send(pkt, ch)
            conn.pending[mid] = {'stream': self, 'off': self.nxt, 'len': n}
            self.nxt += n
            self.sent += n
            self.inflight += 1
        return False

    def answer(self, rq, status, frame, pos):
        off, n = rq['off'], rq['len']
        self.inflight -= 1
        if status != smb2q.STATUS_SUCCESS:
            raise smb2q.Failure('%s %s of %d bytes at %d failed: %s' % (
                self.name, self.kind.upper(), n, off,
                smb2q.status_str(status)))
        if self.kind == 'write':
            (count,) = struct.unpack_from('<I', frame, pos + 68)
            if count != n:
                raise smb2q.Failure('%s WRITE at %d: %d of %d bytes' % (
                    self.name, off, count, n))
            return
        doff, = struct.unpack_from('<B', frame, pos + 66)
        dlen, = struct.unpack_from('<I', frame, pos + 68)
        got = bytes(memoryview(frame)[pos + doff:pos + doff + dlen])
        exp = self.pattern.get(off, n)
        if got != exp:
            raise smb2q.Failure('%s READ of %d bytes at %d: %s' % (
                self.name, n, off,
                'short, %d bytes' % dlen if dlen != n else
                'differs at byte %d' % (
                    off + smb2q.first_mismatch(exp, got))))
        self.early[off] = got
        while self.hashed in self.early:
            b = self.early.pop(self.hashed)
            self.h.update(b)
            self.hashed += len(b)
        if self.hashed == self.size:
            self.passes.append(self.h.hexdigest())
            self.h = hashlib.sha256()
            self.hashed = 0


def drive(conn, streams):
    """Every stream at once over the one connection, until the writers
    are done and the readers have finished their pass in progress (at
    least one each).  While a reader's rate holds it back, the loop waits
    for responses POLL s at a time, so that it sends again in time."""
    readers = [s for s in streams if s.kind == 'read']
    writers = [s for s in streams if s.kind == 'write']
    conn.ensure_credits(sum(s.depth * conn.charge(s.req)
                            for s in streams) + 1)
    while not all(s.done() for s in streams):
        if all(s.done() for s in writers):
            for s in readers:
                if s.passes:
                    s.stop = True
        throttled = False
        for s in streams:
            throttled |= s.fill(conn)
        if throttled and not conn.frames:
            readable, _ = conn._wait(time.monotonic() + POLL, False)
            if readable:
                conn._fill()
            if not conn.frames:
                continue
        elif not conn.pending:
            continue
        for mid, status, frame, pos, _end in conn.recv_responses():
            rq = conn.pending.pop(mid, None)
            if rq is None:
                raise smb2q.Failure('response to unknown message id %d'
                                    % mid)
            if rq.get('what') == 'break_ack':
                conn._break_ack_done(rq, status)
                continue
            rq['stream'].answer(rq, status, frame, pos)


def test_write_cache_and_prefetch_share_one_budget(stack, srv):
    fuse = stack['FUSE_MOUNT']
    tag = uuid.uuid4().hex[:8]
    d = 'budget-%s' % tag
    os.mkdir(os.path.join(fuse, d))
    os.chmod(os.path.join(fuse, d), 0o777)
    rnames = ['%s/r%d' % (d, i) for i in range(READERS)]
    wnames = ['%s/w%d' % (d, i) for i in range(WRITERS)]
    rpats = [smb2q.Pattern('budget-r%d-%s' % (i, tag))
             for i in range(READERS)]
    wpats = [smb2q.Pattern('budget-w%d-%s' % (i, tag))
             for i in range(WRITERS)]
    rsha = []
    for name, pat in zip(rnames, rpats):
        data = pat.get(0, READ_SIZE)
        with open(os.path.join(fuse, name), 'wb') as f:
            f.write(data)
        rsha.append(hashlib.sha256(data).hexdigest())

    conn = smb2q.Conn('127.0.0.1', srv.port, stack['SMB_USER'],
                      stack['SMB_PASS'], SHARE, timeout=120)
    streams = []
    granted = []
    for name, pat in zip(wnames, wpats):
        fid = conn.open(name, write=True, create=True,
                        lease_key=os.urandom(16))
        granted.append(conn.granted)
        streams.append(Stream('write', fid, name, WRITE_SIZE, WRITE_REQ,
                              WRITE_DEPTH, pat))
    for name, pat in zip(rnames, rpats):
        fid = conn.open(name, write=False, create=False)
        streams.append(Stream('read', fid, name, READ_SIZE, READ_REQ,
                              READ_DEPTH, pat, loop=True, rate=READ_RATE))
    assert granted == ['lease RWH'] * WRITERS, granted
    serving = srv.client_children()

    before = counters(srv)
    sampler = Sampler(srv)
    sampler.start()
    t0 = time.monotonic()
    try:
        drive(conn, streams)
    finally:
        took = time.monotonic() - t0
        sampler.halt.set()
        sampler.join(60)
    for s in streams:
        status = conn.close_status(s.fid)
        assert status == smb2q.STATUS_SUCCESS, \
            '%s: close: %s' % (s.name, smb2q.status_str(status))
    # the counters written after the last change (every 2 s at most)
    time.sleep(3)
    after = counters(srv)
    conn.drop()

    samples = sampler.samples + [after]
    held = [x.get('mem_held', 0) for x in samples]
    both = [x for x in samples
            if x.get('mem_held_wc', 0) > 0 and
            x.get('mem_held', 0) > x.get('mem_held_wc', 0)]
    peak = after.get('mem_peak', 0)
    print('%d writers x %d MiB and %d readers x %d MiB (%s passes) in '
          '%.1f s; budget %d bytes: peak %d, largest sample held '
          '%d, %d of %d samples with both prefetch and the write '
          'cache holding; %d writes cached, %.1f MiB read from prefetch' % (
              WRITERS, WRITE_SIZE // MiB, READERS, READ_SIZE // MiB,
              '/'.join(str(len(s.passes)) for s in streams
                       if s.kind == 'read'), took, CAP,
              peak, max(held), len(both), len(samples),
              after.get('wc_writes', 0) - before.get('wc_writes', 0),
              (after.get('read_bytes_prefetch', 0) -
               before.get('read_bytes_prefetch', 0)) / MiB))
    assert not sampler.errors, sampler.errors

    # the data
    for s in streams:
        if s.kind == 'write':
            path = os.path.join(fuse, s.name)
            assert os.path.getsize(path) == WRITE_SIZE, s.name
            assert sha256_file(path) == s.h.hexdigest(), \
                '%s: the file differs from what was written' % s.name
    for s, want in zip([s for s in streams if s.kind == 'read'], rsha):
        assert s.passes, '%s: no full pass' % s.name
        assert s.passes == [want] * len(s.passes), \
            '%s: a pass differs from the file' % s.name

    # one connection, one smbd process, one budget
    assert len(serving) == 1, serving
    assert after.get('processes') == 1, after

    # the budget
    assert peak <= CAP, 'the budget held %d bytes at its peak, more ' \
        'than prefetch max memory (%d)' % (peak, CAP)
    assert max(held) <= CAP, 'a sample held %d bytes, more than prefetch ' \
        'max memory (%d)' % (max(held), CAP)

    # ... and it was under pressure from both sides
    assert peak > CAP // 2, 'the budget never held half of %d bytes: ' \
        'the workload did not press on it (peak %d)' % (CAP, peak)
    assert after.get('wc_writes', 0) > before.get('wc_writes', 0)
    assert after.get('read_bytes_prefetch', 0) > \
        before.get('read_bytes_prefetch', 0)
    assert both, 'no sample saw prefetch and the write cache hold memory ' \
        'at once: %r' % [(x.get('mem_held'), x.get('mem_held_wc'))
                         for x in samples]

    for name in rnames + wnames:
        os.unlink(os.path.join(fuse, name))
    os.rmdir(os.path.join(fuse, d))
