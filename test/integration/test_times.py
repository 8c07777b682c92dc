"""Every time field a client sees, step by step, against the local share.

One file is created on the stack's `glusterfs2` share and, the same way,
on `local` (Samba's default VFS on a local directory, the reference), and
walked through: create, write, read, a directory listing, set-info of the
access and write times, close with full information (the CLOSE response
carries the times), and a fresh open.  After every step the four times
(create, access, write, change) are read from FileBasicInformation, from
FileNetworkOpenInformation, from the listing entry and from the CLOSE
response, wherever the step gives them.

A time is never compared by its value across shares (the steps run at
different moments); it is classified: `zero` (NTTIME(0), "no time"),
`set N` (exactly the value set-info N wrote), `step S` (inside the
wall-clock window of step S, with a tolerance for the clocks' rounding:
both shares' files live on this machine), or `after S` (between step S
and the next: smbd's delayed write time update stamps the write time 2 s
after the first write, on its own timer).  glusterfs2's classification of
every field after every step must equal local's, except where local's own
behaviour is not fixed: whether a read moves the access time depends on
the mount's atime policy (relatime on local disk, Gluster's own atime
handling on the volume), so after a read the access time may be either
the step it had or the read's; both must agree again once set-info wrote
it.
"""

import os
import struct
import time
import uuid

import pytest

from gf2_smb2 import Client, s3, smb2q
RawPacket = smb2q.RawPacket

SHARES = ('glusterfs2', 'local')
GAP = 1.2               # seconds between steps, so that windows differ
TOL = 0.3               # rounding of the stored times, seconds
NT_EPOCH = 11644473600  # seconds from 1601 to 1970
FIELDS = ('create', 'access', 'write', 'change')
# Two instants set-info writes: well in the past, and distinct.
SET_ACCESS = (1600000000, 123456700)    # (seconds, ns), 100 ns units
SET_WRITE = (1500000000, 987654300)


def nt(sec, nsec):
    return (sec + NT_EPOCH) * 10000000 + nsec // 100


def basic_times(raw):
    """FileBasicInformation: the four times."""
    return dict(zip(FIELDS, struct.unpack_from('<QQQQ', raw, 0)))


class Walk:
    """The steps on one share, with the wall-clock windows of each."""

    def __init__(self, stack, share, name):
        self.cl = Client(stack, share)
        self.c = self.cl.conn.c
        self.tid = self.cl.conn.tid
        self.name = name
        self.windows = {}
        self.seen = []      # (step, source, {field: nttime})

    def step(self, label, fn):
        t0 = time.time()
        out = fn()
        t1 = time.time()
        self.windows[label] = (t0, t1)
        time.sleep(GAP)
        return out

    def query(self, fid, label):
        self.cl.conn.quiet()
        raw = self.c.queryInfo(self.tid, fid, infoType=1, fileInfoClass=4)
        self.seen.append((label, 'basic', basic_times(raw)))
        raw = self.c.queryInfo(self.tid, fid, infoType=1, fileInfoClass=34)
        self.seen.append((label, 'network-open', basic_times(raw)))

    def listing(self, label):
        self.cl.conn.quiet()
        st, dfid = self.cl.create('', directory=True,
                                  disposition=s3.FILE_OPEN)
        assert st == 0, st
        raw = self.c.queryDirectory(self.tid, dfid, self.name,
                                    informationClass=37)
        self.c.close(self.tid, dfid)
        # FILE_ID_BOTH_DIR_INFORMATION: next, index, then the four times
        self.seen.append((label, 'listing',
                          dict(zip(FIELDS,
                                   struct.unpack_from('<QQQQ', raw, 8)))))

    def set_times(self, fid):
        blob = struct.pack('<QQQQII', 0, nt(*SET_ACCESS), nt(*SET_WRITE),
                           0, 0, 0)
        self.cl.conn.quiet()
        self.c.setInfo(self.tid, fid, inputBlob=blob, infoType=1,
                       fileInfoClass=4)

    def close_full(self, fid, label):
        """CLOSE with SMB2_CLOSE_FLAG_POSTQUERY_ATTRIB: the times come in
        the response."""
        status, rsp = self.cl.request(RawPacket(
            s3.SMB2_CLOSE, self.tid,
            struct.pack('<HHI16s', 24, 1, 0, fid)))
        assert status == 0, status
        size, flags = struct.unpack_from('<HH', rsp, 64)
        assert (size, flags) == (60, 1), (size, flags)
        self.seen.append((label, 'close',
                          dict(zip(FIELDS, struct.unpack_from(
                              '<QQQQ', rsp, 64 + 8)))))
        tbl = self.c._Session['OpenTable']
        self.c.GlobalFileTable.pop(tbl[fid]['FileName'], None)
        del tbl[fid]

    def run(self):
        cl = self.cl
        box = {}

        def create():
            st, fid = cl.create(self.name, disposition=s3.FILE_CREATE)
            assert st == 0, st
            box['fid'] = fid
        self.step('create', create)
        fid = box['fid']
        self.query(fid, 'create')

        def write():
            st, n = cl.write(fid, 0, b'x' * 4096)
            assert st == 0 and n == 4096
        self.step('write', write)
        self.query(fid, 'write')

        def read():
            st, data = cl.read(fid, 0, 4096)
            assert st == 0 and data == b'x' * 4096
        self.step('read', read)
        self.query(fid, 'read')
        self.listing('read')

        self.step('set-info', lambda: self.set_times(fid))
        self.query(fid, 'set-info')
        self.listing('set-info')
        self.step('close', lambda: self.close_full(fid, 'close'))

        def reopen():
            st, f2 = cl.create(self.name, disposition=s3.FILE_OPEN)
            assert st == 0, st
            box['fid'] = f2
        self.step('reopen', reopen)
        self.query(box['fid'], 'reopen')
        self.listing('reopen')
        cl.close(box['fid'])
        cl.drop()

    def classify(self, v):
        if v == 0:
            return 'zero'
        if v == nt(*SET_ACCESS):
            return 'set access'
        if v == nt(*SET_WRITE):
            return 'set write'
        t = v / 10000000.0 - NT_EPOCH
        last = None
        for label, (t0, t1) in sorted(self.windows.items(),
                                      key=lambda kv: kv[1][0]):
            if t0 - TOL <= t:
                last = (label, t1)
        if last is None:
            return 'other (%.3f)' % t
        if t <= last[1] + TOL:
            return 'step ' + last[0]
        # between two steps: a time smbd stamped by itself (the delayed
        # write time update, 2 s after the first write)
        return 'after ' + last[0]

    def table(self):
        return [(label, src, f, self.classify(times[f]))
                for label, src, times in self.seen for f in FIELDS]


# Where local itself may do either (see the module docstring).
EITHER = {('read', 'access'): ('step create', 'step write', 'step read')}


@pytest.fixture(scope='module')
def walks(stack):
    tag = uuid.uuid4().hex[:10]
    out = {}
    for share in SHARES:
        w = Walk(stack, share, 'times-%s-%s.dat' % (tag, share))
        try:
            w.run()
        finally:
            d = stack['LOCAL_DIR'] if share == 'local' else \
                stack['FUSE_MOUNT']
            try:
                os.unlink(os.path.join(d, w.name))
            except OSError:
                pass
        out[share] = w.table()
    return out


def test_no_time_is_zero(walks):
    """No step shows NTTIME(0) for any time field, on either share."""
    for share, rows in walks.items():
        zero = [r[:3] for r in rows if r[3] == 'zero']
        assert zero == [], '[%s] shows time 0 for %s' % (share, zero)


def test_times_as_local(walks):
    """Every time field after every step is what local shows, where local
    is determined."""
    local = walks['local']
    g2 = walks['glusterfs2']
    assert [r[:3] for r in g2] == [r[:3] for r in local]
    diffs = []
    for lr, gr in zip(local, g2):
        label, src, field = lr[:3]
        if (label, field) in EITHER:
            ok = EITHER[(label, field)]
            assert lr[3] in ok, lr
            if gr[3] not in ok:
                diffs.append((gr, lr[3]))
            continue
        if gr[3] != lr[3]:
            diffs.append((gr, lr[3]))
    assert diffs == [], 'glusterfs2 (got) differs from local (wanted): ' + \
        '; '.join('%s %s %s: %s, local %s' % (g[0], g[1], g[2], g[3], l)
                  for g, l in diffs)


def test_set_info_times_kept(walks):
    """The times set-info wrote are the ones every later step shows."""
    for share, rows in walks.items():
        for label, src, field, cls in rows:
            if label in ('set-info', 'close', 'reopen'):
                if field == 'access':
                    assert cls == 'set access', (share, label, src, cls)
                if field == 'write':
                    assert cls == 'set write', (share, label, src, cls)
