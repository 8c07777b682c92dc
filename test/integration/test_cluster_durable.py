"""Durable handles across a failover of test/cluster, on glusterfs2's share.

A client opens a file through a public address with an RWH lease and a
durable handle (SMB 3.0 DH2Q, which Samba grants with a handle-caching
lease when kernel oplocks, kernel share modes and, for a handle holding
locks, posix locking are off, as the cluster's smb.conf has them), writes
half of it, and loses its connection when the node holding the address
fails.  It connects again to the same address, now served by another
node, and asks to reconnect the handle (DH2C with the same create GUID and
lease key):

- the node is disabled (`ctdb disable`): CTDB releases the address, the
  old node's smbd disconnects the client cleanly and keeps the durable
  open, disconnected, in the clustered open and locking databases; the
  new node reconnects the handle.  The client writes the second half
  through it and reads the whole file back, and the volume has every
  byte.
- the node is killed (its ctdbd and smbd SIGKILL) or cut off (its link
  down): the open was never disconnected, and its record names a process
  that is gone from the cluster, which Samba treats as closed (it deletes
  such a record when it looks it up), so the reconnect is answered
  OBJECT_NAME_NOT_FOUND and the client opens the file anew; every byte
  acknowledged before the failure is on the volume.

The time until the address serves again and the reconnect's status are
printed (DURABLE lines).  Samba grants the handle only to the same client
(the same ClientGuid: gf2_cluster.Head's client_seed).
"""

import hashlib
import os
import struct
import time
import uuid

import pytest
from impacket import smb3structs as s3

import gf2_cluster
from gf2_cluster import Head
from gf2_failover import fail_node, holder, restore

MIB = 1 << 20
HALF = 4 * MIB
SHARE_ALL = s3.FILE_SHARE_READ | s3.FILE_SHARE_WRITE | s3.FILE_SHARE_DELETE
LEASE_RWH = 0x07
STATUS_SUCCESS = 0
STATUS_OBJECT_NAME_NOT_FOUND = 0xC0000034


@pytest.fixture(scope='module')
def env():
    e = gf2_cluster.cluster()
    yield e
    gf2_cluster.take_down()


def context(name, data):
    """One SMB2 create context, padded to 8 bytes."""
    body = name + b'\0' * 4 + data
    body += b'\0' * (-len(body) % 8)
    return struct.pack('<IHHHHI', 0, 16, len(name), 0, 24, len(data)) + body


def chain(*ctxs):
    out = b''
    for i, c in enumerate(ctxs):
        if i < len(ctxs) - 1:
            c = struct.pack('<I', len(c)) + c[4:]
        out += c
    return out


def contexts_of(resp):
    """{name: data} of a create response's contexts."""
    r = s3.SMB2Create_Response(resp['Data'])
    buf = resp['Data'][r['CreateContextsOffset'] - 64:][
        :r['CreateContextsLength']]
    out, pos = {}, 0
    while pos < len(buf):
        nxt, noff, nlen, _r, doff, dlen = struct.unpack_from('<IHHHHI',
                                                             buf, pos)
        out[bytes(buf[pos + noff:pos + noff + nlen])] = \
            bytes(buf[pos + doff:pos + doff + dlen])
        if not nxt:
            break
        pos += nxt
    return r, out


def raw_create(h, path, disposition, ctxs):
    """CREATE with our own contexts; returns (status, file id, contexts)."""
    srv = h.conn.getSMBServer()
    name = path.encode('utf-16le')
    req = s3.SMB2Create()
    req['SecurityFlags'] = 0
    req['RequestedOplockLevel'] = s3.SMB2_OPLOCK_LEVEL_LEASE
    req['ImpersonationLevel'] = s3.SMB2_IL_IMPERSONATION
    req['DesiredAccess'] = (s3.FILE_READ_DATA | s3.FILE_WRITE_DATA |
                            s3.FILE_READ_ATTRIBUTES)
    req['FileAttributes'] = s3.FILE_ATTRIBUTE_NORMAL
    req['ShareAccess'] = SHARE_ALL
    req['CreateDisposition'] = disposition
    req['CreateOptions'] = s3.FILE_NON_DIRECTORY_FILE
    req['NameLength'] = len(name)
    req['Buffer'] = name
    off = 64 + s3.SMB2Create.SIZE + len(name)
    pad = -off % 8
    req['Buffer'] += b'\0' * pad
    req['CreateContextsOffset'] = off + pad
    req['CreateContextsLength'] = len(ctxs)
    req['Buffer'] += ctxs
    packet = srv.SMB_PACKET()
    packet['Command'] = s3.SMB2_CREATE
    packet['TreeID'] = h.tid
    packet['Data'] = req
    ans = srv.recvSMB(srv.sendSMB(packet))
    if ans['Status'] != STATUS_SUCCESS:
        return ans['Status'], None, {}
    r, ctx = contexts_of(ans)
    fid = r['FileID'].getData()
    # impacket's read and write look the file up in its own table
    srv._Session['OpenTable'][fid] = {
        'FileID': r['FileID'], 'TreeConnect': h.tid, 'FileName': path,
        'Durable': True}
    return STATUS_SUCCESS, fid, ctx


def lease_ctx(key):
    return context(b'RqLs', struct.pack('<16sIIQ', key, LEASE_RWH, 0, 0))


def durable_open(h, path, key, guid):
    dh2q = struct.pack('<II8s16s', 0, 0, b'\0' * 8, guid)
    return raw_create(h, path, s3.FILE_OVERWRITE_IF,
                      chain(lease_ctx(key), context(b'DH2Q', dh2q)))


def durable_reconnect(h, path, fid, key, guid):
    dh2c = fid + guid + struct.pack('<I', 0)
    return raw_create(h, path, s3.FILE_OPEN,
                      chain(lease_ctx(key), context(b'DH2C', dh2c)))


def pattern(tag, n):
    block = hashlib.sha256(tag).digest() * (MIB // 32)
    return block * (n // MIB)


def wait_served_elsewhere(env, addr, old, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = holder(env, addr, skip=(old,))
        if now is not None and now != old:
            try:
                Head(addr, env, timeout=5).drop()
                return now
            except Exception:
                pass
        time.sleep(0.5)
    raise AssertionError('%s not served by another node after %d s' %
                         (addr, timeout))


def fuse_sha(env, name):
    with open(os.path.join(env['FUSE_MOUNT'], name), 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.mark.parametrize('how', ['disable', 'kill', 'cutoff'])
def test_durable_handle_across_failover(env, how):
    addr = env['PUBLIC_IPS'].split()[0]
    node = holder(env, addr)
    assert node is not None, 'nobody holds %s' % addr
    name = 'durable-%s-%s.bin' % (how, uuid.uuid4().hex[:8])
    key, guid = os.urandom(16), os.urandom(16)
    client = guid.hex()         # one client: one ClientGuid
    first, second = pattern(b'first', HALF), pattern(b'second', HALF)

    h = Head(addr, env, client_seed=client)
    status, fid, ctx = durable_open(h, name, key, guid)
    assert status == STATUS_SUCCESS, '0x%08x' % status
    assert b'DH2Q' in ctx, 'no durable handle granted: %r' % list(ctx)
    for off in range(0, HALF, MIB):
        h.write(fid, first[off:off + MIB], off)

    try:
        fail_node(env, how, node)
        h.drop()
        took = time.monotonic()
        new = wait_served_elsewhere(env, addr, node)
        took = time.monotonic() - took
        h = Head(addr, env, client_seed=client)
        status, fid2, ctx = durable_reconnect(h, name, fid, key, guid)
        print('DURABLE %s: node %d -> %d in %.1f s, reconnect 0x%08x' %
              (how, node, new, took, status))
        if how == 'disable':
            assert status == STATUS_SUCCESS, \
                'reconnect after disable: 0x%08x' % status
            for off in range(0, HALF, MIB):
                h.write(fid2, second[off:off + MIB], HALF + off)
            back = h.read_all(fid2, 2 * HALF)
            assert hashlib.sha256(back).digest() == \
                hashlib.sha256(first + second).digest()
            h.close(fid2)
            want = first + second
        else:
            assert status == STATUS_OBJECT_NAME_NOT_FOUND, \
                'reconnect after kill: 0x%08x' % status
            fid2 = h.open(name, s3.FILE_READ_DATA | s3.FILE_READ_ATTRIBUTES,
                          SHARE_ALL)
            assert hashlib.sha256(h.read_all(fid2, HALF)).digest() == \
                hashlib.sha256(first).digest()
            h.close(fid2)
            want = first
        h.drop()
        assert fuse_sha(env, name) == hashlib.sha256(want).hexdigest()
    finally:
        restore(env, how, node)
        try:
            os.unlink(os.path.join(env['FUSE_MOUNT'], name))
        except OSError:
            pass
