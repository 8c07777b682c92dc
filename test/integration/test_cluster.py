"""Clustered heads (test/cluster): every head serves one volume through
glusterfs2, and what one head grants or writes, the others see.

The cluster is brought up (`test/cluster up`, 3 nodes) when it is not up,
and taken down at the end if these tests brought it up.  Each check talks
to two or three heads through their own node addresses at once, with one
SMB2 session per head (impacket).  Every test runs twice: with the share
as it is by default, then with `glusterfs2:write cache = yes` on every
head (`test/cluster up --share-option`; the nodes reload their smb.conf).
"""

import hashlib
import os
import sys
import threading
import time
import uuid

import pytest
from impacket import smb3structs as s3
from impacket.smbconnection import SessionError
from impacket import nt_errors

import gf2_cluster
from gf2_cluster import Head

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'tools'))
import smb2q  # noqa: E402

READ = s3.FILE_READ_DATA | s3.FILE_READ_ATTRIBUTES
WRITE = s3.FILE_WRITE_DATA | s3.FILE_READ_ATTRIBUTES
RW = READ | WRITE
SHARE_ALL = s3.FILE_SHARE_READ | s3.FILE_SHARE_WRITE | s3.FILE_SHARE_DELETE


# The share options each run of the tests gives [gf2cl] on every head.
SHARE_OPTIONS = {
    'default': (),
    'wcache': ('glusterfs2:write cache = yes',),
}


@pytest.fixture(scope='module')
def cluster_lifetime():
    yield
    gf2_cluster.take_down()


@pytest.fixture(scope='module', params=sorted(SHARE_OPTIONS))
def cl(request, cluster_lifetime):
    opts = SHARE_OPTIONS[request.param]
    e = gf2_cluster.cluster(share_options=opts)
    assert e['SHARE_OPTIONS'] == ';'.join(opts), e['SHARE_OPTIONS']
    return e


@pytest.fixture
def heads(cl):
    """One session on each node's own address."""
    hs = [Head(a, cl) for a in cl['NODE_IPS'].split()]
    yield hs
    for h in hs:
        h.drop()


def new_name():
    return 'cl-%s' % uuid.uuid4().hex[:12]


def create(head, name, data):
    fid = head.open(name, RW, SHARE_ALL, s3.FILE_OVERWRITE_IF)
    head.write(fid, data, 0)
    head.close(fid)


def test_same_file_id_on_every_head(cl, heads):
    name = new_name()
    create(heads[0], name, b'x' * 100)
    ids = []
    for h in heads:
        fid = h.open(name, READ, SHARE_ALL)
        ids.append(h.file_index(fid))
        h.close(fid)
    assert len(set(ids)) == 1, 'file ids per head: %s' % [hex(i) for i in ids]
    assert ids[0] != 0
    # and a different file has a different id
    other = new_name()
    create(heads[1], other, b'y')
    fid = heads[-1].open(other, READ, SHARE_ALL)
    assert heads[-1].file_index(fid) != ids[0]
    heads[-1].close(fid)


def test_deny_write_on_one_head_refuses_write_on_another(cl, heads):
    name = new_name()
    create(heads[0], name, b'share modes')
    h1, h2 = heads[0], heads[1]
    # node 1: read, sharing read only (deny write)
    fid1 = h1.open(name, READ, s3.FILE_SHARE_READ)
    try:
        with pytest.raises(SessionError) as err:
            h2.open(name, WRITE, SHARE_ALL)
        assert gf2_cluster.status_of(err.value) == \
            nt_errors.STATUS_SHARING_VIOLATION, \
            gf2_cluster.status_name(gf2_cluster.status_of(err.value))
        # a read open that shares read is compatible
        fid2 = h2.open(name, READ, SHARE_ALL)
        h2.close(fid2)
    finally:
        h1.close(fid1)
    # node 1's handle gone: the write open goes through on node 2
    fid2 = h2.open(name, WRITE, SHARE_ALL)
    h2.close(fid2)


def test_byte_range_lock_on_one_head_blocks_another(cl, heads):
    name = new_name()
    create(heads[0], name, b'\0' * 4096)
    h1, h2 = heads[0], heads[1]
    fid1 = h1.open(name, RW, SHARE_ALL)
    fid2 = h2.open(name, RW, SHARE_ALL)
    try:
        assert h1.lock(fid1, 100, 100) == 0
        # overlapping: refused on node 2
        st = h2.lock(fid2, 150, 10)
        assert st == nt_errors.STATUS_LOCK_NOT_GRANTED, \
            gf2_cluster.status_name(st)
        # not overlapping: granted
        assert h2.lock(fid2, 200, 10) == 0
        assert h2.lock(fid2, 200, 10, unlock=True) == 0
        # node 1 unlocks: node 2 gets the range
        assert h1.lock(fid1, 100, 100, unlock=True) == 0
        assert h2.lock(fid2, 150, 10) == 0
        assert h2.lock(fid2, 150, 10, unlock=True) == 0
    finally:
        h1.close(fid1)
        h2.close(fid2)


def test_data_written_on_one_head_is_read_on_the_others(cl, heads):
    """Each head reads the file first (filling its caches), then another
    head overwrites it: every head reads the new bytes right away (upcall
    invalidation is on for the volume)."""
    name = new_name()
    size = 4 << 20
    old = os.urandom(size)
    create(heads[0], name, old)
    fids = [h.open(name, READ, SHARE_ALL) for h in heads]
    try:
        for h, fid in zip(heads, fids):
            assert hashlib.sha256(h.read_all(fid, size)).hexdigest() == \
                hashlib.sha256(old).hexdigest()
        for writer in range(len(heads)):
            new = os.urandom(size)
            want = hashlib.sha256(new).hexdigest()
            w = heads[writer]
            wfid = w.open(name, WRITE, SHARE_ALL)
            w.write(wfid, new, 0)
            w.close(wfid)
            for i, (h, fid) in enumerate(zip(heads, fids)):
                got = hashlib.sha256(h.read_all(fid, size)).hexdigest()
                assert got == want, 'head %d read stale data after head %d ' \
                    'wrote' % (i + 1, writer + 1)
        # and the FUSE mount of the volume has the last version
        with open(os.path.join(cl['FUSE_MOUNT'], name), 'rb') as f:
            assert hashlib.sha256(f.read()).hexdigest() == want
    finally:
        for h, fid in zip(heads, fids):
            h.close(fid)


def lease_break_seen(cl, holder_addr, opener_addr):
    """A client on holder_addr holds an RWH lease on a new file; a client
    on opener_addr opens it for writing.  Returns (the breaks the holder
    received, the opener's status, whether the opener's open came back
    only after the holder acknowledged)."""
    name = new_name()
    path = os.path.join(cl['FUSE_MOUNT'], name)
    with open(path, 'wb') as f:
        f.write(b'leased')
    os.chmod(path, 0o666)
    holder = smb2q.Conn(holder_addr, int(cl['SMB_PORT']), cl['SMB_USER'],
                        cl['SMB_PASS'], cl['SHARE'], timeout=60)
    opener = Head(opener_addr, cl, timeout=60)
    try:
        holder.open(name, write=True, create=False,
                    lease_key=os.urandom(16))
        assert holder.granted == 'lease RWH', holder.granted
        out = {}

        def do_open():
            try:
                fid = opener.open(name, WRITE, SHARE_ALL)
                out['at'] = time.monotonic()
                out['status'] = 0
                opener.close(fid)
            except SessionError as e:
                out['status'] = gf2_cluster.status_of(e)

        t = threading.Thread(target=do_open)
        t.start()
        holder.await_break(40)
        t.join(60)
        assert not t.is_alive(), 'the opener never got an answer'
        acked = holder.breaks[0]['acked'] if holder.breaks else False
        return (holder.breaks, out.get('status'),
                acked is not False and
                out.get('at', 0) + 0.001 >= holder.t0 + acked)
    finally:
        opener.drop()
        holder.drop()


def test_lease_broken_across_heads(cl):
    """An RWH lease held through node 1 is broken when a client of node 2
    opens the file for writing: the break arrives at node 1's client, it
    loses write caching, and node 2's open completes once the break was
    acknowledged, exactly as between two connections to one head."""
    a = cl['NODE_IPS'].split()
    one = lease_break_seen(cl, a[0], a[0])
    two = lease_break_seen(cl, a[0], a[1])
    for what, (breaks, status, after_ack) in (('one head', one),
                                              ('two heads', two)):
        assert breaks, '%s: no break reached the lease holder' % what
        assert breaks[0]['type'] == 'lease' and breaks[0]['from'] == 'RWH', \
            (what, breaks)
        assert 'W' not in breaks[0]['to'], (what, breaks)
        assert breaks[0]['acked'], (what, breaks)
        assert status == 0, (what, gf2_cluster.status_name(status))
        assert after_ack, '%s: the open completed before the ack' % what
    assert [b['to'] for b in two[0]] == [b['to'] for b in one[0]], (one, two)
