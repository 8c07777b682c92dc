"""The write cache option on clustered heads (test/cluster with
`glusterfs2:write cache = yes` on every head's [gf2cl]).  The cache's
registry, which makes another process's open wait for queued writes, is
the node's own, and smbd sends a lease break without a VFS call before
it, so another head's open would read what has landed, not every
acknowledged byte: on a clustered Samba the module answers the option as
"no" and logs why.  Checked: no write goes through the queue, every byte
head 1 acknowledged is read through head 2 while head 1's handle is
open, and bytes acknowledged and closed survive the head's smbd being
killed.

The cluster is brought up (or its nodes' smb.conf reloaded with the
option) when needed and taken down at the end if these tests brought it
up.  The writer is smb2q (pipelined 64 KiB writes, an RWH lease); that
no write was acknowledged from the queue is checked with the share's
wc_writes counter on the writer's head (tools/glusterfs2-stats run in the
node).
"""

import hashlib
import json
import os
import signal
import sys
import threading
import time
import uuid

import pytest
from impacket import smb3structs as s3
from impacket.smbconnection import SessionError

import gf2_cluster
from gf2_cluster import Head

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, 'test', 'tools'))
import smb2q  # noqa: E402

WCACHE = 'glusterfs2:write cache = yes'
STATS_TOOL = os.path.join(TOP, 'tools', 'glusterfs2-stats')
READ = s3.FILE_READ_DATA | s3.FILE_READ_ATTRIBUTES
SHARE_ALL = s3.FILE_SHARE_READ | s3.FILE_SHARE_WRITE | s3.FILE_SHARE_DELETE
KiB = 1024
MiB = 1024 * KiB
REQ = 64 * KiB
DEPTH = 16
# Not a multiple of the cache's 1 MiB gathers: the last gather is a
# partial one, which only the queue's own sending (or a drain) sends.
SIZE = 24 * MiB + 5 * REQ


@pytest.fixture(scope='module')
def cl():
    e = gf2_cluster.cluster(share_options=(WCACHE,))
    assert e['SHARE_OPTIONS'] == WCACHE, e['SHARE_OPTIONS']
    yield e
    gf2_cluster.take_down()


def new_name():
    return 'clwc-%s' % uuid.uuid4().hex[:12]


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def first_difference(want, got):
    n = min(len(want), len(got))
    for i in range(0, n, MiB):
        if want[i:i + MiB] != got[i:i + MiB]:
            j = i
            while j < n and want[j] == got[j]:
                j += 1
            return j
    return n if len(want) != len(got) else None


def wc_writes(cl, node):
    """The wc_writes counter of [gf2cl] on node N (every smbd process of
    the node, live and gone)."""
    p = gf2_cluster.on_node(node, STATS_TOOL, '--share', cl['SHARE'],
                            '--json', check=False)
    assert p.returncode == 0, p.stdout
    out = p.stdout[p.stdout.index('{'):]
    return json.loads(out)['shares'].get(cl['SHARE'], {}).get('wc_writes',
                                                               0)


def wc_writes_grew(cl, node, before, want, secs=10):
    """wc_writes of node N, waited for (smbd writes its counters on a
    timer) until it grew by want or secs passed: the growth."""
    deadline = time.monotonic() + secs
    while True:
        grew = wc_writes(cl, node) - before
        if grew >= want or time.monotonic() > deadline:
            return grew
        time.sleep(0.5)


def serving_pid(cl, node, conn):
    """The host PID of the smbd process on node N that serves conn (an
    smb2q.Conn to that node): the process holding the node's end of the
    TCP connection."""
    lport = conn.sock.getsockname()[1]
    rport = conn.sock.getpeername()[1]
    pids = gf2_cluster.run('ip', 'netns', 'pids', cl['NS_PREFIX'] +
                           str(node)).stdout.split()
    inodes = set()
    for pid in pids:
        inodes = smb2q.tcp_socket_inodes(
            ('/proc/%s/net/tcp' % pid, '/proc/%s/net/tcp6' % pid),
            lport, rport)
        if inodes:
            break
    pid = smb2q.pid_holding(inodes, pids)
    if pid is None:
        raise AssertionError('no process of node %d serves the connection '
                             'from port %d' % (node, lport))
    return pid


# smbd sets a handle's write time 2 s after its first write, and that
# waits for the queue (a time set lands after every acknowledged byte):
# the first write goes alone and this long before the others, so that
# nothing but the queue's own sending takes the later bytes to the bricks.
WRITE_TIME_DELAY_S = 2.5


def open_under_lease(cl, node, name):
    """A new file created through node N by smb2q with an RWH lease:
    (conn, fid)."""
    conn = smb2q.Conn(cl['NODE_IPS'].split()[node - 1], int(cl['SMB_PORT']),
                      cl['SMB_USER'], cl['SMB_PASS'], cl['SHARE'],
                      timeout=120)
    fid = conn.open(name, write=True, create=True, lease_key=os.urandom(16))
    assert conn.granted == 'lease RWH', conn.granted
    return conn, fid


def write_under_lease(conn, fid, seed, size=SIZE, before_rest=None):
    """size bytes written through conn's handle under its lease: one 64
    KiB write, WRITE_TIME_DELAY_S later (and after before_rest()) the rest,
    64 KiB writes with DEPTH in flight, every one acknowledged; the handle
    left open.  Returns the bytes written."""
    pattern = smb2q.Pattern(seed)
    data = bytes(pattern.generate(0, size))
    status = conn.write(fid, 0, data[:REQ])
    assert status == smb2q.STATUS_SUCCESS, smb2q.status_str(status)
    time.sleep(WRITE_TIME_DELAY_S)
    if before_rest is not None:
        before_rest()
    digest, _secs, _maxout = conn.pipeline(fid, 'write', size - REQ, REQ,
                                           DEPTH, pattern, start=REQ)
    assert sha256(data[REQ:]) == digest
    assert conn.acked == size, conn.acked
    return data


def fuse_bytes(cl, name):
    with open(os.path.join(cl['FUSE_MOUNT'], name), 'rb') as f:
        return f.read()


def test_acknowledged_bytes_are_read_through_another_head(cl):
    """A client of head 1 holds an RWH lease and has every write
    acknowledged, the handle still open; a client of head 2 opens the file
    for reading at once, which breaks the lease (RWH to RH) across the
    heads, and reads it: every acknowledged byte, checksums equal; then the
    FUSE mount has them too.  None of the writes went through the queue
    (wc_writes does not grow), and head 1's log says why."""
    name = new_name()
    before = wc_writes(cl, 1)
    # head 2's session first: its open follows the last write at once
    opener = Head(cl['NODE_IPS'].split()[1], cl, timeout=60)
    holder, fid = open_under_lease(cl, 1, name)
    data = write_under_lease(holder, fid, 1)
    out = {}

    def open_and_read():
        try:
            f2 = opener.open(name, READ, SHARE_ALL)
            out['data'] = opener.read_all(f2, SIZE + MiB)
            opener.close(f2)
        except SessionError as e:
            out['status'] = gf2_cluster.status_name(gf2_cluster.status_of(e))

    try:
        t = threading.Thread(target=open_and_read)
        t.start()
        holder.await_break(40)
        t.join(120)
        assert not t.is_alive(), 'head 2 never answered its read'
        assert 'status' not in out, 'head 2: open or read failed: %s' % \
            out['status']
        assert holder.breaks, 'no lease break reached head 1\'s client'
        assert holder.breaks[0]['from'] == 'RWH' and \
            'W' not in holder.breaks[0]['to'], holder.breaks
        got = out['data']
        assert sha256(got) == sha256(data), \
            'head 2 read %d of the %d bytes head 1 acknowledged, first ' \
            'difference at offset %s' % (len(got), SIZE,
                                         first_difference(data, got))
        assert holder.close_status(fid) == smb2q.STATUS_SUCCESS
    finally:
        opener.drop()
        holder.drop()
    grew = wc_writes_grew(cl, 1, before, 1, secs=5)
    assert grew == 0, \
        'head 1 acknowledged %d of the %d writes from its queue on a ' \
        'clustered Samba' % (grew, SIZE // REQ)
    p = gf2_cluster.on_node(1, 'grep', '-rlF', 'write cache = yes is off '
                            'on a clustered Samba', '/var/log/samba',
                            check=False)
    assert p.returncode == 0, 'head 1 logged nothing of the option: %s' % (
        p.stdout,)
    assert sha256(fuse_bytes(cl, name)) == sha256(data)


def test_bytes_acknowledged_and_closed_survive_a_killed_head(cl):
    """A client of head 1 writes under an RWH lease and closes; the
    smbd process that served it is killed (SIGKILL) the moment the CLOSE
    is answered: every byte is on the volume, read through the host's FUSE
    mount, checksums equal."""
    name = new_name()
    holder, fid = open_under_lease(cl, 1, name)
    try:
        # found before the writes: the kill follows the CLOSE's answer
        pid = serving_pid(cl, 1, holder)
        data = write_under_lease(holder, fid, 2)
        status = holder.close_status(fid)
        os.kill(pid, signal.SIGKILL)
        assert status == smb2q.STATUS_SUCCESS, smb2q.status_str(status)
    finally:
        holder.drop()
    got = fuse_bytes(cl, name)
    assert sha256(got) == sha256(data), \
        'the volume has %d of the %d bytes acknowledged and closed, first ' \
        'difference at offset %s' % (len(got), SIZE,
                                     first_difference(data, got))
