"""Failures of test/cluster's nodes and bricks under clients that move
data through a public address, and the checks after them: the scenarios
of test_cluster_failover.py (failover, brick_killed), which
test_cluster_fcntl_lock.py runs again with CTDB's fcntl lock helper, and
the node failures and restores test_cluster_durable.py uses.

cl is test/cluster env (gf2_cluster.cluster()) with SHARE set to the
share the clients use.
"""

import hashlib
import os
import subprocess
import threading
import time
import uuid

import pytest
from impacket import smb3structs as s3

import gf2_bricks
import gf2_cluster
from gf2_cluster import Head

MIB = 1 << 20
# Each client moves 1 GiB; CI's bounded run (CI=true without
# GF2_CLUSTER_FULL=1) 256 MiB; GF2_CLUSTER_TRANSFER_MIB sets it.
_CI_BOUNDED = (os.environ.get('CI') == 'true' and
               os.environ.get('GF2_CLUSTER_FULL') != '1')
SIZE = int(os.environ.get('GF2_CLUSTER_TRANSFER_MIB',
                          '256' if _CI_BOUNDED else '1024')) * MIB
CHUNK = MIB
PACE = 0.01          # seconds between two chunks
# the failure comes once both clients have moved a third of the file
FAIL_AT = max(8, SIZE // CHUNK // 3)
# seconds a client keeps going, reconnecting after errors, in all
DEADLINE = 180 + SIZE // MIB * 0.2
SHARE_ALL = s3.FILE_SHARE_READ | s3.FILE_SHARE_WRITE | s3.FILE_SHARE_DELETE


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
        # cl: test/cluster env, SHARE the share to use
        self.cl, self.addr, self.name, self.writing = cl, addr, name, write
        self.done_chunks = 0
        self.reconnects = 0
        self.errors = []
        self.data = {}
        self.failed = None
        self.last_ok = None
        self.max_gap = 0.0      # the longest wait between two chunks

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
                t = time.monotonic()
                if self.last_ok is not None:
                    self.max_gap = max(self.max_gap, t - self.last_ok - PACE)
                self.last_ok = t
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
                        '--lock', cl.get('LOCK', 'gfapi'), timeout=600,
                        check=False)
    assert p.returncode == 0, p.stdout[-2000:]


def node_pids(cl, n, *exes):
    """The processes of node n running one of the programs exes."""
    ns = cl['NS_PREFIX'] + str(n)
    out = []
    for p in subprocess.run(['ip', 'netns', 'pids', ns],
                            stdout=subprocess.PIPE,
                            universal_newlines=True).stdout.split():
        try:
            if os.path.basename(os.readlink('/proc/%s/exe' % p)) in exes:
                out.append(int(p))
        except OSError:
            pass
    return out


def fail_node(cl, how, n):
    if how == 'disable':
        gf2_cluster.on_node(n, 'ctdb', 'disable')
    elif how == 'kill':
        victims = node_pids(cl, n, 'ctdbd', 'smbd')
        assert victims
        subprocess.run(['kill', '-KILL'] + [str(p) for p in victims])
    elif how == 'cutoff':
        # The cable, not the node's own interface: CTDB's 10.interface
        # sets a link that is administratively down up again.
        subprocess.run(['ip', 'link', 'set', host_veth(cl, n), 'down'],
                       check=True)


def leader(cl, skip=()):
    """CTDB's leader (1-based), the node that holds the cluster lock, as a
    live node's ctdb sees it."""
    for n in nodes(cl):
        if n in skip:
            continue
        p = gf2_cluster.on_node(n, 'ctdb', 'leader', check=False, timeout=20)
        if p.returncode == 0 and p.stdout.strip().isdigit():
            return int(p.stdout.strip()) + 1
    return None


def banned(cl, skip=()):
    """The nodes (1-based) that a live node's `ctdb -X status` calls
    banned."""
    for n in nodes(cl):
        if n in skip:
            continue
        p = gf2_cluster.on_node(n, 'ctdb', '-X', 'status', check=False,
                                timeout=20)
        if p.returncode != 0:
            continue
        lines = [ln.split('|') for ln in p.stdout.splitlines()]
        head = next((f for f in lines if 'Banned' in f), None)
        if head is None:
            continue
        col = head.index('Banned')
        return [int(f[1]) + 1 for f in lines
                if len(f) > col and f[1].isdigit() and f[col] == '1']
    return None


HELPER = 'ctdb_mutex_glusterfs2_helper'


def lock_helper(cl):
    """the program holding the cluster lock (test/cluster env
    LOCK_HELPER: ours, or CTDB's fcntl helper with `up --lock fcntl`)"""
    return cl.get('LOCK_HELPER', HELPER)


class Transfer:
    """A reader and a writer of SIZE bytes through one address, started
    and left running; check() waits for both and asserts every byte."""

    def __init__(self, cl, addr):
        self.cl, self.fuse = cl, cl['FUSE_MOUNT']
        self.src = 'fo-src-%s' % uuid.uuid4().hex[:8]
        self.dst = 'fo-dst-%s' % uuid.uuid4().hex[:8]
        h = hashlib.sha256()
        with open(os.path.join(self.fuse, self.src), 'wb') as f:
            for _ in range(SIZE // CHUNK):
                block = os.urandom(CHUNK)
                h.update(block)
                f.write(block)
        self.want_read = h.hexdigest()
        h = hashlib.sha256()
        for i in range(SIZE // CHUNK):
            h.update(pattern(i))
        self.want_written = h.hexdigest()
        self.reader = Client(cl, addr, self.src, write=False)
        self.writer = Client(cl, addr, self.dst, write=True)
        self.reader.start()
        self.writer.start()
        t_wait = time.monotonic() + 60 + FAIL_AT * 0.2
        while min(self.reader.done_chunks,
                  self.writer.done_chunks) < FAIL_AT:
            assert time.monotonic() < t_wait, 'clients did not get going'
            assert self.reader.is_alive() and self.writer.is_alive()
            time.sleep(0.1)

    def join(self):
        self.reader.join(DEADLINE)
        self.writer.join(DEADLINE)

    def check(self):
        assert self.reader.failed is None, self.reader.failed
        assert self.writer.failed is None, self.writer.failed
        h = hashlib.sha256()
        for i in range(SIZE // CHUNK):
            h.update(self.reader.data[i])
        assert h.hexdigest() == self.want_read, \
            'bytes read differ from the file'
        h = hashlib.sha256()
        with open(os.path.join(self.fuse, self.dst), 'rb') as f:
            for block in iter(lambda: f.read(CHUNK), b''):
                h.update(block)
        assert h.hexdigest() == self.want_written, \
            'the written file on the volume differs from what was sent'

    def remove(self):
        for name in (self.src, self.dst):
            try:
                os.unlink(os.path.join(self.fuse, name))
            except OSError:
                pass


def gluster(*args, timeout=180):
    return subprocess.run(['gluster', '--mode=script'] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=timeout)


def heal_pending(vol):
    """Entries still to heal on the volume's bricks (None: not known)."""
    p = gluster('volume', 'heal', vol, 'info')
    counts = [int(ln.split(':')[1]) for ln in p.stdout.splitlines()
              if ln.startswith('Number of entries:') and
              ln.split(':')[1].strip().isdigit()]
    return sum(counts) if p.returncode == 0 and counts else None


def failover(cl, how):
    """The node holding an address of cl fails (how: disable, kill,
    cutoff, or lockholder: the leader killed) during a Transfer through
    it; the address moves and serves again, the checksums hold, and
    after the lock holder's death another node leads and none is banned.
    The node is restored at the end."""
    lock_node = helpers = None
    if how == 'lockholder':
        # the leader holds the cluster lock: kill it through the address
        # it serves, and leave its lock helper to notice
        lock_node = leader(cl)
        assert lock_node is not None, 'no node is the leader'
        helpers = node_pids(cl, lock_node, lock_helper(cl))
        assert helpers, 'the leader (node %d) runs no %s' % (
            lock_node, lock_helper(cl))
        held = [a for a in cl['PUBLIC_IPS'].split()
                if holder(cl, a) == lock_node]
        assert held, 'the leader (node %d) holds no public address' % \
            lock_node
        addr = held[0]
    else:
        addr = cl['PUBLIC_IPS'].split()[0]
    old = holder(cl, addr)
    assert old is not None, 'nobody holds %s' % addr
    # a node that leads takes the cluster lock with it: the others must
    # take it again before they recover, which the times show
    was_leader = (lock_node or leader(cl)) == old
    # the lock holder dies as a killed node does
    failure = 'kill' if how == 'lockholder' else how
    t = Transfer(cl, addr)

    t0 = time.monotonic()
    fail_node(cl, failure, old)
    moved = served = helper_gone = new_leader = None
    while time.monotonic() - t0 < DEADLINE:
        if helpers and helper_gone is None and \
                not any(os.path.exists('/proc/%d' % p) for p in helpers):
            helper_gone = time.monotonic() - t0
        if lock_node and new_leader is None:
            n = leader(cl, skip=(old,))
            if n is not None and n != old:
                new_leader = time.monotonic() - t0
        if moved is None:
            h = holder(cl, addr, skip=(old,))
            if h is not None and h != old:
                moved = time.monotonic() - t0
        if moved is not None and served is None and serves(cl, addr):
            served = time.monotonic() - t0
        if served is not None and (lock_node is None or (
                helper_gone is not None and new_leader is not None)):
            break
        time.sleep(0.2)
    t.join()
    print('\nFAILOVER [%s] %s: node %d%s held %s; moved after %s s, served '
          'a new session after %s s; reader reconnects %d, writer '
          'reconnects %d'
          % (cl['SHARE'], how, old, ' (the leader)' if was_leader else '',
             addr, moved and round(moved, 1),
             served and round(served, 1), t.reader.reconnects,
             t.writer.reconnects))
    if lock_node:
        print('FAILOVER [%s] %s: the lock helper exited after %s s, another '
              'node led after %s s' % (cl['SHARE'], how, helper_gone and
                                       round(helper_gone, 1),
                                       new_leader and round(new_leader, 1)))
    try:
        assert moved is not None, 'the address did not move'
        assert served is not None, 'the address did not serve again'
        t.check()
        if lock_node:
            assert helper_gone is not None, \
                'the lock helper outlived its ctdbd'
            assert new_leader is not None, 'no other node took the lead'
            assert banned(cl, skip=(old,)) == [], \
                'nodes banned after the lock holder died'
    finally:
        restore(cl, failure, old)
        t.remove()


def brick_killed(cl):
    """One brick of the data volume and one of the lock volume killed
    during a Transfer: the address stays, the checksums hold, the lock is
    never given up and no node is banned; the bricks are started again
    and healed."""
    addr = cl['PUBLIC_IPS'].split()[0]
    old = holder(cl, addr)
    lead = leader(cl)
    assert old is not None and lead is not None
    helpers = node_pids(cl, lead, lock_helper(cl))
    assert helpers, 'the leader (node %d) runs no %s' % (lead,
                                                          lock_helper(cl))
    vols = (cl['GLUSTER_VOLUME'], cl['LOCK_VOLUME'])
    t = Transfer(cl, addr)
    victims = {}
    try:
        for vol in vols:
            pids = gf2_bricks.brick_pids({'GLUSTER_VOLUME': vol})
            assert len(pids) == 3, '%s: bricks online %s' % (vol, pids)
            path = sorted(pids)[0]
            victims[vol] = path
            os.kill(pids[path], 9)
        t.join()
        print('\nBRICK KILLED [%s]: %s; reader reconnects %d, writer '
              'reconnects %d; longest stall %.1f s' % (
                  cl['SHARE'], ', '.join('%s %s' % kv
                                         for kv in victims.items()),
                  t.reader.reconnects, t.writer.reconnects,
                  max(t.reader.max_gap, t.writer.max_gap)))
        t.check()
        assert holder(cl, addr) == old, 'the address moved'
        assert leader(cl) == lead, 'the lead (and the lock) changed hands'
        assert node_pids(cl, lead, lock_helper(cl)) == helpers, \
            'the lock helper was replaced: the lock was given up'
        assert banned(cl) == [], 'nodes banned after a brick died'
    finally:
        t.remove()
        for vol in victims:
            gluster('volume', 'start', vol, 'force')
        end = time.monotonic() + 180
        while victims and time.monotonic() < end:
            if all(len(gf2_bricks.brick_pids({'GLUSTER_VOLUME': v})) == 3
                   and heal_pending(v) == 0 for v in victims):
                break
            time.sleep(2)
        else:
            if victims:
                pytest.fail('the killed bricks did not come back healed '
                            'within 180 s')
