"""Raw SMB2 requests over test/tools/smb2q's Conn (an impacket session),
for the tests that need more than a client library gives: requests in
flight together, info classes smbclient does not ask for, a second login
on the same TCP connection (the same smbd process).

Client: one session and tree connect to a share of the stack, with a
request at a time answered as (status, bytes): read, write, create,
close, echo.  STATUS maps NTSTATUS names to codes.

The helpers below work on a Conn directly:

    conn = connect(stack, 'glusterfs2')     # or smb2q.Conn(...)
    fid = open_file(conn, conn.tid, 'dir\\\\f', write=False)
    data = read_on(conn, conn.tid, fid, 0, 65536)

Every helper takes the Conn and a tree id, so that one connection can work
on several shares (conn.c.connectTree).
"""

import os
import struct
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

sys.path.insert(0, os.path.join(TOP, 'test', 'tools'))
import smb2q  # noqa: E402

from impacket import smb3, smb3structs as s3, nt_errors  # noqa: E402

STATUS = {name: code for code, (name, _d) in nt_errors.ERROR_MESSAGES.items()}

SET_INFO_REQ = struct.Struct('<HBBIHHI16s')     # 32 bytes, then the buffer
IOCTL_REQ = struct.Struct('<HHI16sIIIIIIII')    # 56 bytes, then the input
QUERY_DIRECTORY_REQ = struct.Struct('<HBBI16sHHI')     # 32 bytes, the name
CREATE_REQ = struct.Struct('<HBBIQQIIIIIHHII')          # 56 bytes, the name

FILE_FULL_DIRECTORY_INFORMATION = 2
FILE_STANDARD_INFORMATION = 5
FILE_FULL_EA_INFORMATION = 15
FILE_ALLOCATION_INFORMATION = 19
FILE_END_OF_FILE_INFORMATION = 20
FSCTL_SET_ZERO_DATA = 0x000980C8
FSCTL_SRV_REQUEST_RESUME_KEY = 0x00140078
FSCTL_SRV_COPYCHUNK_WRITE = 0x001480F2
SMB2_0_IOCTL_IS_FSCTL = 1

STATUS_ACCESS_DENIED = 0xC0000022
STATUS_NO_EAS_ON_FILE = 0xC0000052


# -- a client of the stack's smbd -----------------------------------------

def status_name(code):
    return smb2q.status_name(code)


class Client:
    """One session and tree connect to `share`, raw requests on top."""

    def __init__(self, stack, share):
        self.share = share
        self.conn = smb2q.Conn(stack['SMB_HOST'], int(stack['SMB_PORT']),
                               stack['SMB_USER'], stack['SMB_PASS'], share,
                               timeout=60.0)
        self.pid = self.conn.server_pid
        # impacket caps what it records at 1 MiB; smbd enforces its own
        # (smb2 max read/write, at most 0xFFFF00 with SMB 3.0).
        self.max_read = server_max(stack, 'smb2 max read')
        self.max_write = server_max(stack, 'smb2 max write')

    def request(self, packet, charge=1):
        """Send one request; (status, response bytes)."""
        c = self.conn
        c.ensure_credits(charge + 1)
        mid = c.send(packet, charge)
        c.pending[mid] = {'what': 'request'}
        while True:
            for rmid, status, frame, start, end in c.recv_responses():
                if rmid == mid:
                    c.pending.pop(mid, None)
                    return status, bytes(frame[start:end])
                raise AssertionError('response to unexpected message id %d'
                                     % rmid)

    def read(self, fid, off, n, charge=None):
        """(status, data)."""
        if charge is None:
            charge = self.conn.charge(n)
        status, rsp = self.request(self.conn.read_packet(fid, off, n),
                                   charge)
        if status != 0:
            return status, b''
        doff, _r, dlen = struct.unpack_from('<BBI', rsp, 64 + 2)
        return status, rsp[doff:doff + dlen]

    def write(self, fid, off, data, charge=None):
        """(status, count)."""
        if charge is None:
            charge = self.conn.charge(len(data))
        status, rsp = self.request(self.conn.write_packet(fid, off, data),
                                   charge)
        if status != 0:
            return status, 0
        (count,) = struct.unpack_from('<I', rsp, 64 + 4)
        return status, count

    def echo(self):
        p = self.conn.c.SMB_PACKET()
        p['Command'] = s3.SMB2_ECHO
        p['Data'] = s3.SMB2Echo()
        status, _ = self.request(p)
        return status

    def create(self, path, directory=False, disposition=s3.FILE_OPEN_IF,
               access=None):
        """(status, file id or None)."""
        self.conn.quiet()
        if access is None:
            access = (s3.FILE_READ_DATA | s3.FILE_WRITE_DATA |
                      s3.FILE_APPEND_DATA | s3.FILE_READ_ATTRIBUTES |
                      s3.FILE_WRITE_ATTRIBUTES | s3.SYNCHRONIZE |
                      s3.DELETE)
            if directory:
                access = (s3.FILE_LIST_DIRECTORY | s3.FILE_READ_ATTRIBUTES |
                          s3.SYNCHRONIZE | s3.DELETE)
        opts = s3.FILE_DIRECTORY_FILE if directory else \
            s3.FILE_NON_DIRECTORY_FILE
        try:
            fid = self.conn.c.create(
                self.conn.tid, path.replace('/', '\\'), access,
                s3.FILE_SHARE_READ | s3.FILE_SHARE_WRITE |
                s3.FILE_SHARE_DELETE, opts, disposition,
                s3.FILE_ATTRIBUTE_DIRECTORY if directory else
                s3.FILE_ATTRIBUTE_NORMAL)
        except smb3.SessionError as e:
            return e.get_error_code(), None
        return 0, fid

    def close(self, fid):
        self.conn.quiet()
        try:
            self.conn.c.close(self.conn.tid, fid)
        except smb3.SessionError as e:
            return e.get_error_code()
        return 0

    def alive(self):
        """The serving smbd child still exists and answers an ECHO."""
        if self.pid is not None:
            assert os.path.exists('/proc/%d' % self.pid), \
                'smbd child %d serving [%s] is gone' % (self.pid, self.share)
        status = self.echo()
        assert status == 0, 'ECHO on [%s] answered %s' % (
            self.share, status_name(status))

    def drop(self):
        self.conn.drop()


def server_max(stack, param):
    out = subprocess.run(['testparm', '-s', '--parameter-name=' + param,
                          stack['SMB_CONF']], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, universal_newlines=True,
                         check=True).stdout
    return min(int(out.strip()), 0xFFFF00)


def connect(env, share, timeout=60, user=None, password=None):
    """A Conn to share of the smbd env names (the stack's env, or a private
    smbd's client_env()), as SMB_USER unless user is given."""
    return smb2q.Conn(env['SMB_HOST'], int(env['SMB_PORT']),
                      user or env['SMB_USER'], password or env['SMB_PASS'],
                      share, timeout=timeout)


# -- packets ---------------------------------------------------------------

def set_info_packet(conn, fid, info_class, buf):
    return smb2q.RawPacket(s3.SMB2_SET_INFO, conn.tid, SET_INFO_REQ.pack(
        33, s3.SMB2_0_INFO_FILE, info_class, len(buf), 64 + 32, 0, 0,
        fid) + buf)


def close_packet(conn, fid):
    return smb2q.RawPacket(s3.SMB2_CLOSE, conn.tid,
                           struct.pack('<HHI16s', 24, 0, 0, fid))


def zero_data_packet(conn, fid, off, end):
    buf = struct.pack('<QQ', off, end)
    return smb2q.RawPacket(s3.SMB2_IOCTL, conn.tid, IOCTL_REQ.pack(
        57, 0, FSCTL_SET_ZERO_DATA, fid, 64 + 56, len(buf), 0, 0, 0, 0,
        SMB2_0_IOCTL_IS_FSCTL, 0) + buf)


def ioctl_packet(tid, fid, code, data, max_out):
    """An FSCTL code on fid with input data, at most max_out bytes back."""
    return smb2q.RawPacket(s3.SMB2_IOCTL, tid, IOCTL_REQ.pack(
        57, 0, code, fid, 64 + 56, len(data), 0, 0, 0, max_out,
        SMB2_0_IOCTL_IS_FSCTL, 0) + data)


def copy_source_and_key(cl, src, dst):
    """For a copy-chunk through Client cl: src opened to read, dst
    created, and src's resume key; (source fid, destination fid, key)."""
    st, sfid = cl.create(src, disposition=s3.FILE_OPEN,
                         access=s3.FILE_READ_DATA |
                         s3.FILE_READ_ATTRIBUTES | s3.SYNCHRONIZE)
    assert st == 0, smb2q.status_name(st)
    st, dfid = cl.create(dst, disposition=s3.FILE_CREATE)
    assert st == 0, smb2q.status_name(st)
    st, rsp = cl.request(ioctl_packet(cl.conn.tid, sfid,
                                      FSCTL_SRV_REQUEST_RESUME_KEY, b'', 32))
    assert st == 0, smb2q.status_name(st)
    ooff, _ = struct.unpack_from('<II', rsp, 64 + 32)
    return sfid, dfid, rsp[ooff:ooff + 24]


# -- answers ---------------------------------------------------------------

def collect(conn, mids, bound):
    """{mid: (status, frame)} for every message id, or fail after bound
    seconds with the ids still unanswered."""
    got = {}
    conn.timeout = bound
    deadline = time.monotonic() + bound
    while set(mids) - set(got):
        if time.monotonic() > deadline:
            break
        try:
            for mid, status, frame, pos, end in conn.recv_responses():
                got[mid] = (status, bytes(frame[pos:end]))
                conn.pending.pop(mid, None)
        except smb2q.Failure:
            break
    missing = sorted(set(mids) - set(got))
    assert not missing, (
        'no answer within %.0f s to message ids %s (a read left waiting '
        'for prefetched data that was dropped?)' % (bound, missing))
    return got


def read_data(resp):
    """The data of a READ answer (status, frame); fails unless SUCCESS."""
    status, frame = resp
    assert status == smb2q.STATUS_SUCCESS, smb2q.status_str(status)
    doff, = struct.unpack_from('<B', frame, 66)
    dlen, = struct.unpack_from('<I', frame, 68)
    return frame[doff:doff + dlen]


def request(conn, packet, charge=1):
    """Send one request and wait for its answer: (status, frame)."""
    mid = conn.send(packet, charge)
    conn.pending[mid] = {}
    return collect(conn, [mid], 60)[mid]


# -- files and directories -------------------------------------------------

def read_on(conn, tid, fid, off, n):
    return read_data(request(conn, smb2q.RawPacket(
        s3.SMB2_READ, tid, smb2q.READ_REQ.pack(49, 0x50, 0, n, off, fid, 0,
                                               0, 0, 0, 0, 0))))


def write_on(conn, tid, fid, off, data):
    status, frame = request(conn, smb2q.RawPacket(
        s3.SMB2_WRITE, tid, smb2q.WRITE_REQ.pack(
            49, 64 + 48, len(data), off, fid, 0, 0, 0, 0, 0) + data),
        conn.charge(len(data)))
    assert status == smb2q.STATUS_SUCCESS, smb2q.status_str(status)


def open_file(conn, tid, path, write):
    access = s3.FILE_READ_DATA | s3.FILE_READ_ATTRIBUTES | s3.SYNCHRONIZE
    if write:
        access |= s3.FILE_WRITE_DATA | s3.FILE_WRITE_ATTRIBUTES
    conn.quiet()
    return conn.c.create(tid, path, access, s3.FILE_SHARE_READ |
                         s3.FILE_SHARE_WRITE | s3.FILE_SHARE_DELETE,
                         s3.FILE_NON_DIRECTORY_FILE, s3.FILE_OPEN,
                         s3.FILE_ATTRIBUTE_NORMAL)


def open_for_eas(conn, tid, path):
    """path opened to read its data and EAs (FILE_READ_EA)."""
    conn.quiet()
    return conn.c.create(tid, path, s3.FILE_READ_DATA | s3.FILE_READ_EA |
                         s3.FILE_READ_ATTRIBUTES | s3.SYNCHRONIZE,
                         s3.FILE_SHARE_READ | s3.FILE_SHARE_WRITE |
                         s3.FILE_SHARE_DELETE, s3.FILE_NON_DIRECTORY_FILE,
                         s3.FILE_OPEN, s3.FILE_ATTRIBUTE_NORMAL)


def open_dir(conn, tid, path):
    return conn.c.create(tid, path, s3.FILE_LIST_DIRECTORY |
                         s3.FILE_READ_ATTRIBUTES | s3.SYNCHRONIZE,
                         s3.FILE_SHARE_READ | s3.FILE_SHARE_WRITE |
                         s3.FILE_SHARE_DELETE, s3.FILE_DIRECTORY_FILE,
                         s3.FILE_OPEN, 0)


def ea_sizes(conn, tid, path):
    """{name: EaSize} of a listing of directory path through tree tid."""
    fid = open_dir(conn, tid, path)
    out = {}
    try:
        raw = conn.c.queryDirectory(
            tid, fid, informationClass=FILE_FULL_DIRECTORY_INFORMATION)
        pos = 0
        while True:
            nxt, = struct.unpack_from('<I', raw, pos)
            nlen, ea = struct.unpack_from('<II', raw, pos + 60)
            name = raw[pos + 68:pos + 68 + nlen].decode('utf-16-le')
            out[name] = ea
            if not nxt:
                break
            pos += nxt
    finally:
        conn.c.close(tid, fid)
    return out


def ea_names(conn, tid, fid):
    """The names of the EAs of open file fid (smbd drops their 'user.')."""
    try:
        raw = conn.c.queryInfo(tid, fid, infoType=s3.SMB2_0_INFO_FILE,
                               fileInfoClass=FILE_FULL_EA_INFORMATION)
    except smb2q.smb3.SessionError as e:
        if e.get_error_code() == STATUS_NO_EAS_ON_FILE:
            return []
        raise
    names = []
    pos = 0
    while pos < len(raw):
        nxt, _flags, nlen, _vlen = struct.unpack_from('<IBBH', raw, pos)
        names.append(raw[pos + 8:pos + 8 + nlen].decode())
        if not nxt:
            break
        pos += nxt
    return names


def end_of_file(conn, tid, path):
    """EndOfFile of path opened for attributes only: smbd opens no file
    descriptor for it, and the module answers the stat by path."""
    conn.quiet()
    fid = conn.c.create(tid, path, s3.FILE_READ_ATTRIBUTES | s3.SYNCHRONIZE,
                        s3.FILE_SHARE_READ | s3.FILE_SHARE_WRITE |
                        s3.FILE_SHARE_DELETE, s3.FILE_NON_DIRECTORY_FILE,
                        s3.FILE_OPEN, s3.FILE_ATTRIBUTE_NORMAL)
    try:
        raw = conn.c.queryInfo(tid, fid, infoType=s3.SMB2_0_INFO_FILE,
                               fileInfoClass=FILE_STANDARD_INFORMATION)
    finally:
        conn.c.close(tid, fid)
    return struct.unpack_from('<Q', raw, 8)[0]


def create_eof(conn, tid, path):
    """Open path for attributes only and close it: the EndOfFile of the
    CREATE response (smbd's stat of the path at open)."""
    name = path.encode('utf-16-le')
    status, frame = request(conn, smb2q.RawPacket(
        s3.SMB2_CREATE, tid, CREATE_REQ.pack(
            57, 0, 0, 2, 0, 0, s3.FILE_READ_ATTRIBUTES | s3.SYNCHRONIZE, 0,
            s3.FILE_SHARE_READ | s3.FILE_SHARE_WRITE | s3.FILE_SHARE_DELETE,
            s3.FILE_OPEN, s3.FILE_NON_DIRECTORY_FILE, 64 + 56, len(name),
            0, 0) + name))
    assert status == smb2q.STATUS_SUCCESS, smb2q.status_str(status)
    eof, = struct.unpack_from('<Q', frame, 64 + 48)
    fid = bytes(frame[64 + 64:64 + 80])
    request(conn, close_packet(conn, fid))
    return eof


# -- two users on one connection -------------------------------------------

def second_login(conn, user, password, share):
    """A second SMB login (another user) on conn's TCP connection, so one
    smbd process serves both; returns (its state, tree id).  impacket
    keeps one login per connection object: use_login swaps them."""
    first = conn.c._Session
    fresh = dict(first)
    fresh.update({'SessionID': 0, 'TreeConnectTable': {}, 'OpenTable': {},
                  'SessionKey': b'', 'SigningActivated': False,
                  'SigningKey': '', 'EncryptionKey': '',
                  'DecryptionKey': '', 'ApplicationKey': b'',
                  'SessionFlags': 0})
    conn.c._Session = fresh
    conn.quiet()
    conn.c.login(user, password)
    tid = conn.c.connectTree(share)
    second = conn.c._Session
    conn.c._Session = first
    return second, tid


def use_login(conn, state):
    conn.c._Session = state


def eof_as(conn, state, tid, path):
    """End of file of path under the login state (second_login), or the
    status code if refused; conn's own login is restored after."""
    own = conn.c._Session
    use_login(conn, state)
    try:
        return end_of_file(conn, tid, path)
    except smb2q.smb3.SessionError as e:
        return e.get_error_code()
    finally:
        use_login(conn, own)
