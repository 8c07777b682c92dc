"""Gluster calls made later on behalf of a request are made as its user.

gfapi takes a call's identity from the submitting thread's effective uid,
gid and groups: whatever smbd's main thread holds when the call is made.
A read that crosses the end of a file returns short from Gluster and is
continued (a second call, for the rest, which finds EOF) from the first
call's completion in smbd's main loop; by then another request may have
switched smbd to another identity.

What a wrong identity changes on the bricks: GlusterFS 10's access-control
translator checks permission at open and on path operations, and lets
reads and writes on an open fd of a gfapi client pass whoever the frame
names (it treats clients with a real pid like FUSE, whose kernel checked
at open), so a continuation made as another user returns the same data
here: the data read says nothing of the identity.  What does is the
brick: at log level TRACE each brick logs every request's credentials
("Auth Info: pid: P, uid: U, ...") followed by the fop it dispatches to
("Actor found: GlusterFS 4.x v1 - READ ...").  The test turns that on
for the read and asserts that every READ the bricks received in that
window carries SMB_USER's uid, and that one came after the FLUSH made
smbd SMB_USER2 (the continuation): a module that sends the continuation
with whatever identity smbd holds then fails it.  The module's own debug
line for such a call ("call of uid U made while smbd holds uid V") is
checked too.

A private smbd (the stack's port plus its own offset) serves the
stack's volume as [ida] glusterfs2 without prefetch, and [idb] the same with `force user =
SMB_USER2`: one session, two tree connects, two identities.  A file of
200000 bytes, mode 0600, belongs to SMB_USER.  Gluster's debug/delay-gen
translator delays every brick READ by 1 s.  Through [ida] the test reads
64 KiB at 196608 (3392 bytes before EOF); while Gluster holds that read,
a FLUSH on [idb] (any request on a tree connect makes smbd switch to that
tree's user) leaves smbd as SMB_USER2.  The read must return the file's
last 3392 bytes, as it does without the FLUSH.
"""

import os
import re
import struct
import subprocess
import time
import uuid

import pytest

from conftest import READ_DELAY
from gf2_private_smbd import PrivateSmbd
from gf2_smb2 import Client, s3, smb2q

SIZE = 200000
OFF = 196608


def gluster(*args):
    return subprocess.run(['gluster', '--mode=script', 'volume'] +
                          list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT,
                          universal_newlines=True)


@pytest.fixture(scope='module')
def srv(stack, slow_reads_1s):
    s = PrivateSmbd('identasync', stack)
    g2 = s.gf2_share([('glusterfs2:prefetch', 'no'), ('posix locking', 'no')])
    s.write_conf([], [
        ('ida', g2),
        ('idb', g2 + [('force user', stack['SMB_USER2'])])])
    for env in s.serving():
        env['PRIVATE_DIR'] = s.dir
        yield env


@pytest.fixture
def private_file(srv):
    name = 'ident-%s.dat' % uuid.uuid4().hex[:10]
    path = os.path.join(srv['FUSE_MOUNT'], name)
    data = os.urandom(SIZE)
    with open(path, 'wb') as f:
        f.write(data)
    subprocess.run(['chown', srv['SMB_USER'], path], check=True)
    os.chmod(path, 0o600)
    yield name, data
    os.unlink(path)


def read_tail(cl, fid, other_tid):
    """(status, data) of the read at OFF; with other_tid, a FLUSH on that
    tree connect is sent while Gluster holds the read."""
    c = cl.conn
    c.ensure_credits(4)
    rmid = c.send(c.read_packet(fid, OFF, 65536), 1)
    c.pending[rmid] = {'what': 'read'}
    want = {rmid}
    if other_tid is not None:
        time.sleep(READ_DELAY / 3)
        fmid = c.send(smb2q.RawPacket(
            s3.SMB2_FLUSH, other_tid,
            struct.pack('<HHI16s', 24, 0, 0, b'\xff' * 16)), 1)
        c.pending[fmid] = {'what': 'flush'}
        want.add(fmid)
    got = {}
    while want - set(got):
        for mid, status, frame, start, end in c.recv_responses():
            c.pending.pop(mid, None)
            got[mid] = (status, bytes(frame[start:end]))
    status, rsp = got[rmid]
    if status != 0:
        return status, b''
    doff, _r, dlen = struct.unpack_from('<BBI', rsp, 64 + 2)
    return status, rsp[doff:doff + dlen]


def brick_logs(stack):
    return ['/var/log/glusterfs/bricks/%s.log' % b.strip('/').replace(
        '/', '-') for b in stack['BRICK_DIRS'].split()]


@pytest.fixture
def brick_trace(srv):
    """The bricks at log level TRACE; yields a function that returns
    the uid of each READ the bricks received since."""
    logs = brick_logs(srv)
    sizes = {p: os.path.getsize(p) if os.path.exists(p) else 0
             for p in logs}
    p = gluster('set', srv['GLUSTER_VOLUME'], 'diagnostics.brick-log-level',
                'TRACE')
    assert p.returncode == 0, p.stdout
    time.sleep(3)           # the bricks take the new level

    def read_uids():
        uids = []
        for path in logs:
            with open(path, errors='replace') as f:
                f.seek(sizes[path])
                uid = None
                for line in f:
                    m = re.search(r'Auth Info: pid: -?\d+, uid: (\d+)', line)
                    if m:
                        uid = int(m.group(1))
                    elif 'Actor found:' in line and ' - READ for ' in \
                            line and uid is not None:
                        uids.append(uid)
                        uid = None
        return uids
    try:
        yield read_uids
    finally:
        gluster('reset', srv['GLUSTER_VOLUME'],
                'diagnostics.brick-log-level')


def log_sizes(d):
    return {n: os.path.getsize(os.path.join(d, n)) for n in os.listdir(d)
            if n.startswith('log.')}


def log_since(d, sizes):
    text = ''
    for n in os.listdir(d):
        if n.startswith('log.'):
            with open(os.path.join(d, n), errors='replace') as f:
                f.seek(sizes.get(n, 0))
                text += f.read()
    return text


def uid_of(user):
    return int(subprocess.run(['id', '-u', user], stdout=subprocess.PIPE,
                              universal_newlines=True,
                              check=True).stdout)


def test_continuation_made_as_the_requests_user(srv, private_file,
                                               brick_trace):
    name, data = private_file
    sizes = log_sizes(srv['PRIVATE_DIR'])
    cl = Client(srv, 'ida')
    # the module's debug lines (DBGC_VFS at level 10) in the serving
    # child's log
    p = subprocess.run(['smbcontrol', '-s', srv['SMB_CONF'], str(cl.pid),
                        'debug', '1 vfs:10'], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    assert p.returncode == 0, p.stdout
    st, fid = cl.create(name, disposition=s3.FILE_OPEN,
                        access=s3.FILE_READ_DATA | s3.FILE_READ_ATTRIBUTES |
                        s3.SYNCHRONIZE)
    assert st == 0, smb2q.status_name(st)
    cl.conn.quiet()
    tid_b = cl.conn.c.connectTree('idb')
    try:
        alone = read_tail(cl, fid, None)
        crossed = read_tail(cl, fid, tid_b)
    finally:
        cl.close(fid)
        cl.drop()
    assert alone == (0, data[OFF:]), smb2q.status_name(alone[0])
    assert crossed[0] == 0, \
        'the read failed with %s after a request of another user came ' \
        'in while Gluster held it' % smb2q.status_name(crossed[0])
    assert crossed[1] == data[OFF:]
    uids = brick_trace()
    print('READs at the bricks, by uid: %s' % uids)
    user, user2 = uid_of(srv['SMB_USER']), uid_of(srv['SMB_USER2'])
    # alone: the read and its continuation; crossed: the same two
    assert len(uids) >= 4, 'the bricks logged %d READs' % len(uids)
    assert user2 not in uids and set(uids) == {user}, \
        'READs sent to the bricks as uids %s; the reader is %d, the other ' \
        'tree connect\'s user %d' % (uids, user, user2)
    line = 'call of uid %d made while smbd holds uid %d' % (
        uid_of(srv['SMB_USER']), uid_of(srv['SMB_USER2']))
    assert line in log_since(srv['PRIVATE_DIR'], sizes), \
        'the continuation was not made as the reading user'
