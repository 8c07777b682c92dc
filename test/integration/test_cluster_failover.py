"""Failover of a public address of test/cluster while a client writes and
another reads through it: the node holding the address is disabled
(`ctdb disable`), killed (its ctdbd and smbd SIGKILL), or cut off (its
link down).  The address moves to another node, both clients reconnect to
the same address and go on from the last acknowledged offset, and the
checksums hold: every byte read is the file's, the written file on the
volume is what the writer sent.  The time from the failure until the
address is held by another node and serves a new session there is
printed (FAILOVER lines), never asserted.

The cluster is brought up when it is not up and taken down at the end if
these tests brought it up; each scenario leaves it healthy again.
"""

import hashlib
import os
import subprocess
import threading
import time
import uuid

import pytest
from impacket import smb3structs as s3

import gf2_cluster
from gf2_cluster import Head

MIB = 1 << 20
SIZE = 48 * MIB
CHUNK = MIB
PACE = 0.05          # seconds between two chunks: the transfer spans the failure
DEADLINE = 180       # seconds a client keeps trying to reconnect
SHARE_ALL = s3.FILE_SHARE_READ | s3.FILE_SHARE_WRITE | s3.FILE_SHARE_DELETE


@pytest.fixture(scope='module')
def cl():
    e = gf2_cluster.cluster()
    yield e
    gf2_cluster.take_down()


def nodes(cl):
    return list(range(1, int(cl['NODES']) + 1))


def holder(cl, addr, skip=()):
    """The node (1-based) that holds addr, as a live node's ctdb sees it."""
    for n in nodes(cl):
        if n in skip:
            continue
        p = gf2_cluster.on_node(n, 'ctdb', '-X', 'ip', check=False, timeout=20)
        if p.returncode != 0:
            continue
        for line in p.stdout.splitlines()[1:]:
            f = line.split('|')
            if len(f) > 2 and f[1] == addr:
                return int(f[2]) + 1 if f[2] != '-1' else None
    return None


def pattern(i):
    return hashlib.sha256(b'failover %d' % i).digest() * (CHUNK // 32)


class Client(threading.Thread):
    """Reads or writes one file through one address, chunk by chunk,
    reconnecting (new session, same address) after any error and going
    on from the last chunk the server acknowledged."""

    def __init__(self, cl, addr, name, write):
        super().__init__(daemon=True)
        self.cl, self.addr, self.name, self.writing = cl, addr, name, write
        self.done_chunks = 0
        self.reconnects = 0
        self.errors = []
        self.data = {}
        self.failed = None
        self.first_ok_after = {}

    def connect(self):
        h = Head(self.addr, self.cl, timeout=10)
        if self.writing:
            fid = h.open(self.name, s3.FILE_WRITE_DATA | s3.FILE_READ_ATTRIBUTES,
                         SHARE_ALL, s3.FILE_OPEN_IF)
        else:
            fid = h.open(self.name, s3.FILE_READ_DATA | s3.FILE_READ_ATTRIBUTES,
                         SHARE_ALL)
        return h, fid

    def run(self):
        end = time.monotonic() + DEADLINE
        h = fid = None
        n = SIZE // CHUNK
        while self.done_chunks < n:
            if time.monotonic() > end:
                self.failed = 'gave up at chunk %d: %s' % (self.done_chunks,
                                                          self.errors[-3:])
                return
            try:
                if h is None:
                    h, fid = self.connect()
                i = self.done_chunks
                if self.writing:
                    h.write(fid, pattern(i), i * CHUNK)
                else:
                    self.data[i] = h.read(fid, i * CHUNK, CHUNK)
                self.done_chunks += 1
                self.last_ok = time.monotonic()
                time.sleep(PACE)
            except Exception as e:  # any failure: a new session
                self.errors.append(repr(e)[:200])
                if h is not None:
                    h.drop()
                h = None
                self.reconnects += 1
                time.sleep(0.5)
        try:
            h.close(fid)
        except Exception:
            pass
        h.drop()


def serves(cl, addr):
    try:
        h = Head(addr, cl, timeout=5)
        h.drop()
        return True
    except Exception:
        return False


def host_veth(cl, n):
    """The host end of node n's veth (test/cluster env HOST_VETHS)."""
    return cl['HOST_VETHS'].split()[n - 1]


def restore(cl, how, n):
    if how == 'disable':
        gf2_cluster.on_node(n, 'ctdb', 'enable')
    elif how == 'cutoff':
        subprocess.run(['ip', 'link', 'set', host_veth(cl, n), 'up'],
                       check=True)
    # `up` restarts a node that is down and waits for every node OK
    p = gf2_cluster.run(gf2_cluster.CLUSTER, 'up', '--nodes', cl['NODES'],
                        timeout=600, check=False)
    assert p.returncode == 0, p.stdout[-2000:]


def fail_node(cl, how, n):
    if how == 'disable':
        gf2_cluster.on_node(n, 'ctdb', 'disable')
    elif how == 'kill':
        ns = cl['NS_PREFIX'] + str(n)
        pids = subprocess.run(['ip', 'netns', 'pids', ns], stdout=subprocess.PIPE,
                              universal_newlines=True).stdout.split()
        victims = [p for p in pids
                   if os.path.basename(os.readlink('/proc/%s/exe' % p))
                   in ('ctdbd', 'smbd')]
        assert victims
        subprocess.run(['kill', '-KILL'] + victims)
    elif how == 'cutoff':
        # The cable, not the node's own interface: CTDB's 10.interface
        # sets a link that is administratively down up again.
        subprocess.run(['ip', 'link', 'set', host_veth(cl, n), 'down'],
                       check=True)


@pytest.mark.parametrize('how', ['disable', 'kill', 'cutoff'])
def test_failover(cl, how):
    addr = cl['PUBLIC_IPS'].split()[0]
    old = holder(cl, addr)
    assert old is not None, 'nobody holds %s' % addr
    fuse = cl['FUSE_MOUNT']
    src = 'fo-src-%s' % uuid.uuid4().hex[:8]
    dst = 'fo-dst-%s' % uuid.uuid4().hex[:8]
    body = os.urandom(SIZE)
    with open(os.path.join(fuse, src), 'wb') as f:
        f.write(body)
    want_read = hashlib.sha256(body).hexdigest()
    want_written = hashlib.sha256(
        b''.join(pattern(i) for i in range(SIZE // CHUNK))).hexdigest()

    reader = Client(cl, addr, src, write=False)
    writer = Client(cl, addr, dst, write=True)
    reader.start()
    writer.start()
    t_wait = time.monotonic() + 60
    while min(reader.done_chunks, writer.done_chunks) < 8:
        assert time.monotonic() < t_wait, 'clients did not start'
        assert reader.is_alive() and writer.is_alive()
        time.sleep(0.1)

    t0 = time.monotonic()
    fail_node(cl, how, old)
    moved = served = None
    while time.monotonic() - t0 < DEADLINE:
        if moved is None:
            h = holder(cl, addr, skip=(old,))
            if h is not None and h != old:
                moved = time.monotonic() - t0
        if moved is not None and serves(cl, addr):
            served = time.monotonic() - t0
            break
        time.sleep(0.2)
    reader.join(DEADLINE)
    writer.join(DEADLINE)
    print('\nFAILOVER %s: node %d held %s; moved after %s s, served a new '
          'session after %s s; reader reconnects %d, writer reconnects %d'
          % (how, old, addr, moved and round(moved, 1),
             served and round(served, 1), reader.reconnects, writer.reconnects))
    try:
        assert moved is not None, 'the address did not move'
        assert served is not None, 'the address did not serve again'
        assert reader.failed is None, reader.failed
        assert writer.failed is None, writer.failed
        got = hashlib.sha256(b''.join(reader.data[i]
                                      for i in range(SIZE // CHUNK))).hexdigest()
        assert got == want_read, 'bytes read differ from the file'
        with open(os.path.join(fuse, dst), 'rb') as f:
            assert hashlib.sha256(f.read()).hexdigest() == want_written, \
                'the written file on the volume differs from what was sent'
    finally:
        restore(cl, how, old)
        for name in (src, dst):
            try:
                os.unlink(os.path.join(fuse, name))
            except OSError:
                pass
