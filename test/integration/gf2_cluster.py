"""The clustered heads of test/cluster, for the tests of test_cluster*.py.

cluster() brings the cluster up (`test/cluster up`) if it is not up and
returns its `test/cluster env`; take_down() runs `test/cluster down` if
this process brought it up (GF2_CLUSTER_KEEP=1 leaves it up), unless the
next test to run uses the cluster too: the test files that use it share
one cluster, brought up once and taken down after the last of them
(conftest.py tells which test comes next; a cluster up and a down took
37 s and 60-90 s each in CI).  Head is one
SMB2 session (impacket) to one address of the cluster, with the few calls
the tests need, byte-range locks included (impacket's own SMB3.lock joins
str() of the lock elements, which is wrong on Python 3).
"""

import os
import random
import subprocess

from impacket import smb3structs as s3
from impacket.smbconnection import SMBConnection
from impacket import nt_errors

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
CLUSTER = os.path.join(TOP, 'test', 'cluster')

_brought_up = False
# set by conftest.py before each test's teardown: whether the next test
# (in another module or not) is one of a module that imports this one
next_test_uses_cluster = False


def run(*args, timeout=600, check=True):
    return subprocess.run(list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True,
                          timeout=timeout, check=check)


def env():
    p = subprocess.run([CLUSTER, 'env'], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    if p.returncode != 0:
        return None
    out = {}
    for line in p.stdout.splitlines():
        if '=' in line:
            k, v = line.split('=', 1)
            out[k] = v.strip().strip("'")
    return out


def cluster(lock='gfapi', share_options=()):
    """test/cluster env of a cluster up with the given cluster lock
    (gfapi: our helper; fcntl: CTDB's on a FUSE mount) and exactly these
    options added to glusterfs2's share ('NAME = VALUE' each), brought
    up, its nodes restarted with that lock, or its smb.conf reloaded with
    those options, when needed."""
    global _brought_up
    e = env()
    want = ';'.join(share_options)
    if (e is not None and e.get('LOCK', 'gfapi') == lock and
            e.get('SHARE_OPTIONS', '') != want):
        # only the options differ: set them, without up's other checks
        args = ['options']
        for opt in share_options:
            args += ['--share-option', opt]
        p = run(CLUSTER, *args, timeout=300, check=False)
        if p.returncode != 0:
            raise RuntimeError('test/cluster options failed:\n' +
                               p.stdout[-3000:])
        e = env()
    if (e is None or e.get('LOCK', 'gfapi') != lock or
            e.get('SHARE_OPTIONS', '') != want):
        args = ['up', '--lock', lock]
        for opt in share_options:
            args += ['--share-option', opt]
        if e is not None:
            args += ['--nodes', e['NODES']]
        p = run(CLUSTER, *args, timeout=900, check=False)
        if p.returncode != 0:
            run(CLUSTER, 'down', timeout=600, check=False)
            raise RuntimeError('test/cluster up failed:\n' + p.stdout[-3000:])
        _brought_up = _brought_up or e is None
        e = env()
    return e


def take_down():
    """The end of a test module's use of the cluster: down if this
    process brought it up and no test that comes next uses it."""
    global _brought_up
    if next_test_uses_cluster:
        return
    if _brought_up and os.environ.get('GF2_CLUSTER_KEEP') != '1':
        run(CLUSTER, 'down', timeout=600, check=False)
        _brought_up = False


def release(lock='gfapi'):
    """take_down() for a module that changed the cluster lock: when the
    cluster stays up (it was up before this process, or GF2_CLUSTER_KEEP=1)
    its nodes go back to LOCK, unless the next test uses the cluster (that
    test's module asks for the lock it needs)."""
    if next_test_uses_cluster:
        return
    if _brought_up and os.environ.get('GF2_CLUSTER_KEEP') != '1':
        take_down()
    elif env() is not None:
        cluster(lock=lock)


def on_node(n, *args, timeout=60, check=True):
    return run(CLUSTER, 'exec', str(n), *args, timeout=timeout, check=check)


def status_of(err):
    return err.getErrorCode() & 0xffffffff


def status_name(code):
    return nt_errors.ERROR_MESSAGES.get(code, ('0x%08x' % code,))[0]


class Head:
    """One SMB2 session to one address of the cluster, one tree."""

    def __init__(self, addr, env, user=None, password=None, timeout=30,
                 client_seed=None):
        """client_seed: the same seed gives the same ClientGuid on every
        connection, as one Windows client has (impacket draws it from
        random while it connects); durable and lease reconnects need it."""
        self.addr = addr
        state = random.getstate()
        if client_seed is not None:
            random.seed(client_seed)
        try:
            self.conn = SMBConnection(addr, addr,
                                      sess_port=int(env['SMB_PORT']),
                                      timeout=timeout,
                                      preferredDialect=s3.SMB2_DIALECT_30)
        finally:
            if client_seed is not None:
                random.setstate(state)
        self.conn.login(user or env['SMB_USER'], password or env['SMB_PASS'])
        self.share = env['SHARE']
        self.tid = self.conn.connectTree(self.share)

    def open(self, path, access, share, disposition=s3.FILE_OPEN):
        return self.conn.createFile(
            self.tid, path, desiredAccess=access, shareMode=share,
            creationOption=s3.FILE_NON_DIRECTORY_FILE,
            creationDisposition=disposition,
            fileAttributes=s3.FILE_ATTRIBUTE_NORMAL)

    def close(self, fid):
        try:
            self.conn.closeFile(self.tid, fid)
        except KeyError:
            # impacket keeps its open files by name: the second of two
            # opens of one name in one session closes on the server, then
            # fails to drop the name it already dropped.
            pass

    def write(self, fid, data, offset=0):
        return self.conn.writeFile(self.tid, fid, data, offset)

    def read(self, fid, offset, n):
        return self.conn.readFile(self.tid, fid, offset, n)

    def read_all(self, fid, size, chunk=1 << 20):
        out = bytearray()
        while len(out) < size:
            got = self.read(fid, len(out), min(chunk, size - len(out)))
            if not got:
                break
            out += got
        return bytes(out)

    def file_index(self, fid):
        """FileInternalInformation: smbd's IndexNumber, made of the
        device (high 32 bits) and the inode (low 32 bits) it sees."""
        blob = self.conn.getSMBServer().queryInfo(
            self.tid, fid, infoType=s3.SMB2_0_INFO_FILE,
            fileInfoClass=s3.SMB2_FILE_INTERNAL_INFO)
        return int.from_bytes(bytes(blob)[:8], 'little')

    def lock(self, fid, offset, length, exclusive=True, unlock=False):
        """One SMB2 LOCK element, failing immediately on a conflict."""
        srv = self.conn.getSMBServer()
        el = s3.SMB2_LOCK_ELEMENT()
        el['Offset'] = offset
        el['Length'] = length
        if unlock:
            el['Flags'] = s3.SMB2_LOCKFLAG_UNLOCK
        else:
            el['Flags'] = ((s3.SMB2_LOCKFLAG_EXCLUSIVE_LOCK if exclusive
                            else s3.SMB2_LOCKFLAG_SHARED_LOCK) |
                           s3.SMB2_LOCKFLAG_FAIL_IMMEDIATELY)
        el['Reserved'] = 0
        packet = srv.SMB_PACKET()
        packet['Command'] = s3.SMB2_LOCK
        packet['TreeID'] = self.tid
        req = s3.SMB2Lock()
        req['FileID'] = fid
        req['LockCount'] = 1
        req['LockSequence'] = 0
        req['Locks'] = el.getData()
        packet['Data'] = req
        ans = srv.recvSMB(srv.sendSMB(packet))
        if ans['Status'] != 0:
            return ans['Status']
        return 0

    def unlink(self, path):
        self.conn.deleteFile(self.share, path)

    def drop(self):
        try:
            self.conn.getSMBServer().get_socket().close()
        except Exception:
            pass
