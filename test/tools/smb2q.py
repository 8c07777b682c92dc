#!/usr/bin/python3
"""smb2q: an SMB2 client that keeps exactly D requests in flight.

libsmbclient and smbclient decide themselves how many SMB2 requests they
have outstanding.  smb2q sets up a session with impacket (NTLM user and
password, SMB 3.0 or 2.1, no signing or encryption unless the server
requires signing) and then drives the data path itself: it sends READ or
WRITE requests until D of them are outstanding, and sends the next one
only when a response has completed one of them, so that exactly D stay in
flight until the end of the file.  It records the largest number of
requests it ever had outstanding and fails if that is not D (a client
that silently serialised would make a depth test meaningless).

Data path details (why not impacket's read()/write()/recvSMB()):

  - Requests go out through impacket's SMB3.sendSMB(), which assigns and
    returns the message id (and signs when signing is on).  The packets
    are RawPacket objects (header packed with one struct call) rather than
    impacket Structures, whose packing costs ~0.5 ms per request.
  - A multi-credit request (CreditCharge = ceil(length / 64 KiB)) consumes
    CreditCharge message ids, but sendSMB advances the sequence window by
    one (impacket moves it on when the response arrives, too late with
    several large requests in flight), so smb2q moves it on by
    CreditCharge-1 right after sending.
  - Responses are collected by message id with smb2q's own receive loop
    on the session's socket, not with recvSMB(): recvSMB drops interim
    (STATUS_PENDING) responses and the credits they grant (Samba grants
    the credits of an async request on its interim response and none on
    the final one), moves the sequence window on at receipt, and builds
    large frames by repeated bytes concatenation.
  - Credits: smb2q counts what it holds (granted minus charged, starting
    from a conservative 1 after impacket's setup calls) and first sends
    ECHO requests until it holds enough for its whole window.  sendSMB
    asks for 127 credits with every request; Samba grants what is asked,
    up to 8192 in all, so the window never runs dry once it is full.
  - An interim response (STATUS_PENDING, async flag) leaves its request
    outstanding; the final response completes it.  Their number is
    reported as interim_responses.
  - Requests outstanding = sent and not yet finally answered, counted
    after every send; max_outstanding_observed is its maximum (the smaller
    of the two phases' maxima for roundtrip, so == depth means both
    reached it).
  - No tree disconnect or logoff at the end: the file is closed and the
    TCP connection dropped (the stock module's tree disconnect waits ~10 s
    for glfs_fini).  `abandon` instead resets the connection (SO_LINGER 0)
    with every request still unanswered.
  - `sustain` keeps --reads reads and --writes writes (DEPTH each by
    default) and --flushes FLUSH requests outstanding on an existing file
    (of at least --size bytes; --lease and --oplock apply), sending
    the next of a kind as each is answered, until the server ends the
    connection (or --duration seconds pass); it tells stderr once all are
    first in flight, and reports what was outstanding when the connection
    ended (outstanding_at_end) and which answers were errors (failed).
    For stopping a server under load: the end of the connection is the
    expected outcome, not a failure.
  - server_pid/server_ppid in the output: the local process holding the
    server end of the connection (found through /proc when the server runs
    on this machine), i.e. the smbd child that served it.

Leases and oplocks (--lease, --oplock exclusive|batch): the CREATE asks
for an RWH lease (a v1 lease context, "RqLs", with --lease-key or a
random key) or the oplock; the level granted is reported as `granted`
("lease RWH", "oplock batch", "oplock II", "none").  Breaks the server
sends are answered (a lease break acknowledgement with the state the
server breaks to, an oplock break acknowledgement with the level), after
--break-delay seconds if given (smb2q sends nothing meanwhile), and
listed in `breaks` with the time since the start of the run.  Without
--lease or --oplock the CREATE asks for neither, as before.

Data pattern: byte o of the stream is byte o of the AES-128-CTR keystream
with key sha256("smb2q:" + seed)[:16] and counter block o // 16 (a
128-bit big-endian integer), so any range can be generated on its own and
a block read from the wrong offset never matches.  OpenSSL (through
python3-cryptography) makes 2-3 GB/s of it on one core.  This is not
test/bench/pattern.h's pattern.

Exit status: 0 success, 1 failure (data mismatch, an NTSTATUS error, a
timeout waiting for responses, depth not reached), 2 bad arguments.
Results are printed as one JSON object on stdout; errors go to stderr.
"""

import argparse
import collections
import hashlib
import json
import os
import re
import select
import socket
import struct
import sys
import time

try:
    from impacket import smb3, smb3structs as s3, nt_errors
except ImportError:                                     # pragma: no cover
    smb3 = None

try:
    from cryptography.hazmat.primitives.ciphers import (Cipher, algorithms,
                                                        modes)
except ImportError:                                     # pragma: no cover
    Cipher = None

MAX_REQ = 8 << 20           # Samba's default smb2 max read/write
MAX_CREDITS = 8192          # Samba's default smb2 max credits
CREDIT_RESERVE = 64         # kept back for create/close/echo

STATUS_SUCCESS = 0
STATUS_PENDING = 0x00000103
FLAG_ASYNC = 0x00000002
HDR = struct.Struct('<4sHHIHHIIQQQ16s')     # the 64-byte SMB2 header
READ_DATA_OFFSET = 64 + 16  # a READ response's data: header, 16-byte body
NBT = struct.Struct('>I')


class Failure(Exception):
    """A test failure: exit status 1."""


class ServerClosed(Failure):
    """The server ended the connection (an orderly close or a reset)."""


class Usage(Exception):
    """A bad argument: exit status 2."""


def status_name(code):
    try:
        return nt_errors.ERROR_MESSAGES[code][0]
    except (KeyError, TypeError, NameError):
        return 'NTSTATUS 0x%08x' % code


def status_str(code):
    return '%s (0x%08x)' % (status_name(code), code)


def parse_size(text, what):
    m = re.match(r'^\s*(\d+)\s*([kmgt]?)(i?b)?\s*$', text, re.I)
    if not m:
        raise Usage('%s: %r is not a size (a number with an optional '
                    'K, M, G or T suffix)' % (what, text))
    n = int(m.group(1))
    n <<= {'': 0, 'k': 10, 'm': 20, 'g': 30, 't': 40}[m.group(2).lower()]
    return n


class Pattern:
    """Byte o = AES-128-CTR keystream byte o under key(seed)."""

    CHUNK = 1 << 20

    def __init__(self, seed):
        self.key = hashlib.sha256(b'smb2q:' + str(seed).encode()).digest()[:16]
        self._zero = b''
        self._chunks = {}           # small cache of 1 MiB-aligned chunks
        self._expect = bytearray()  # expect()'s buffer
        if Cipher is None:
            from Cryptodome.Cipher import AES
            self._aes = AES

    def _zeros(self, n):
        if len(self._zero) < n:
            self._zero = bytes(max(n, self.CHUNK))
        return memoryview(self._zero)[:n]

    def generate(self, off, n):
        """The pattern of [off, off + n), computed."""
        skip = off & 15
        block = off >> 4
        z = self._zeros(n + skip)
        if Cipher is not None:
            enc = Cipher(algorithms.AES(self.key),
                         modes.CTR(block.to_bytes(16, 'big'))).encryptor()
            out = enc.update(z)
        else:
            out = self._aes.new(self.key, self._aes.MODE_CTR, nonce=b'',
                                initial_value=block).encrypt(z)
        return out[skip:] if skip else out

    def expect(self, off, n):
        """The pattern of [off, off + n) as a view that stays valid only
        until the next call: large ranges are computed into one buffer
        kept for reuse, so checking a READ neither allocates nor copies
        its size."""
        if n < self.CHUNK // 2 or Cipher is None:
            return self.get(off, n)
        skip = off & 15
        need = n + skip + 15
        if len(self._expect) < need:
            self._expect = bytearray(need)
        enc = Cipher(algorithms.AES(self.key),
                     modes.CTR((off >> 4).to_bytes(16, 'big'))).encryptor()
        enc.update_into(self._zeros(n + skip), self._expect)
        return memoryview(self._expect)[skip:skip + n]

    def _chunk(self, i):
        c = self._chunks.get(i)
        if c is None:
            if len(self._chunks) >= 16:
                del self._chunks[min(self._chunks)]
            c = self._chunks[i] = self.generate(i * self.CHUNK, self.CHUNK)
        return c

    def get(self, off, n):
        """The pattern of [off, off + n); small ranges are cut from cached
        1 MiB chunks (setting up a cipher costs more than 64 KiB of it)."""
        if n >= self.CHUNK // 2:
            return self.generate(off, n)
        i, j = divmod(off, self.CHUNK)
        if j + n <= self.CHUNK:
            return self._chunk(i)[j:j + n]
        return self._chunk(i)[j:] + self._chunk(i + 1)[:j + n - self.CHUNK]


def first_mismatch(expected, got):
    """Index of the first differing byte (len(shorter) if one is a prefix)."""
    n = min(len(expected), len(got))
    lo = 0
    step = 4096
    while lo < n:
        hi = min(n, lo + step)
        if expected[lo:hi] != got[lo:hi]:
            for i in range(lo, hi):
                if expected[i] != got[i]:
                    return i
        lo = hi
    return n


def tcp_socket_inodes(tables, lport, rport):
    """The socket inodes ('socket:[N]', as /proc/PID/fd links read) of the
    TCP connections from local port rport to local port lport listed in
    the /proc net tables named (tcp, tcp6 of a network namespace)."""
    inodes = set()
    for name in tables:
        try:
            with open(name) as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if len(parts) < 10:
                continue
            if int(parts[1].rsplit(':', 1)[1], 16) == rport and \
                    int(parts[2].rsplit(':', 1)[1], 16) == lport:
                inodes.add('socket:[%s]' % parts[9])
    return inodes


def pid_holding(inodes, pids):
    """The first of pids that has one of the socket inodes open, or None."""
    for pid in pids:
        try:
            fds = os.listdir('/proc/%s/fd' % pid)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink('/proc/%s/fd/%s' % (pid, fd)) in inodes:
                    return int(pid)
            except OSError:
                pass
    return None


def local_peer_pid(sock):
    """PID of the local process that holds the other end of the TCP
    connection `sock` (the smbd child serving it when the server runs on
    this machine), or None when it cannot be found (remote server, no
    permission)."""
    try:
        lport = sock.getsockname()[1]
        rport = sock.getpeername()[1]
    except OSError:
        return None
    targets = tcp_socket_inodes(('/proc/net/tcp', '/proc/net/tcp6'),
                                lport, rport)
    if not targets:
        return None
    me = os.getpid()
    return pid_holding(targets, (pid for pid in os.listdir('/proc')
                                 if pid.isdigit() and int(pid) != me))


def parent_pid(pid):
    """Parent of a local process, or None."""
    if pid is None:
        return None
    try:
        with open('/proc/%d/stat' % pid) as f:
            return int(f.read().rsplit(')', 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


class RawPacket:
    """What impacket's sendSMB() and signSMB() need of a packet (item
    access to the header fields, .fields, getData()), with the header
    packed by one struct call and the body kept as bytes: impacket's
    Structure packing costs ~0.5 ms per request, more than the rest of the
    data path at 64 KiB requests."""

    NAMES = ('CreditCharge', 'Command', 'CreditRequestResponse', 'Flags',
             'MessageID', 'TreeID', 'SessionID', 'Signature')
    PACK = struct.Struct('<4sHHIHHIIQIIQ16s')

    def __init__(self, command, tree_id, body):
        self.fields = {'Command': command, 'TreeID': tree_id, 'Flags': 0,
                       'CreditRequestResponse': 0, 'MessageID': 0,
                       'SessionID': 0, 'Signature': b'\0' * 16}
        self.body = body

    def __getitem__(self, k):
        return self.fields[k]

    def __setitem__(self, k, v):
        if k not in self.NAMES:
            raise KeyError(k)
        if k == 'Signature' and isinstance(v, str):
            v = v.encode('latin-1')
        self.fields[k] = v

    def getData(self):
        f = self.fields
        return self.PACK.pack(
            b'\xfeSMB', 64, f.get('CreditCharge', 0), 0, f['Command'],
            f['CreditRequestResponse'], f['Flags'], 0, f['MessageID'], 0,
            f['TreeID'], f['SessionID'], f['Signature']) + self.body


CREATE_REQ = struct.Struct('<HBBIQQIIIIIHHII')   # 56 bytes, then the name
LEASE_CTX = struct.Struct('<IHHHHI4s4x16sIIQ')    # a v1 "RqLs" context
LEASE_ACK = struct.Struct('<HHI16sIQ')          # 36 bytes
OPLOCK_ACK = struct.Struct('<HBBI16s')          # 24 bytes
BREAK_NOTIFY_OPLOCK = 24
BREAK_NOTIFY_LEASE = 44
LEASE_R, LEASE_H, LEASE_W = 1, 2, 4
OPLOCK_LEVELS = {'none': 0x00, 'II': 0x01, 'exclusive': 0x08, 'batch': 0x09,
                 'lease': 0xff}


def lease_str(state):
    return ''.join(c for c, b in (('R', LEASE_R), ('W', LEASE_W),
                                  ('H', LEASE_H)) if state & b) or 'none'


def oplock_str(level):
    for k, v in OPLOCK_LEVELS.items():
        if v == level:
            return k
    return '0x%02x' % level


READ_REQ = struct.Struct('<HBBIQ16sIIIHHB')     # 49 bytes, 1 buffer byte
WRITE_REQ = struct.Struct('<HHIQ16sIIHHI')      # 48 bytes, then the data


class Conn:
    """One SMB2 session and tree connect, with a pipelined data path."""

    def __init__(self, host, port, user, password, share, dialect='3.0',
                 domain='', timeout=120.0):
        self.timeout = timeout
        self.share = share
        pref = {'3.0': s3.SMB2_DIALECT_30, '2.1': s3.SMB2_DIALECT_21}[dialect]
        try:
            self.c = smb3.SMB3(host, host, sess_port=port,
                               preferredDialect=pref, timeout=timeout)
        except smb3.SessionError as e:
            raise Failure('negotiate with %s:%d failed: %s' % (
                host, port, status_str(e.get_error_code())))
        except Exception as e:      # socket errors, impacket's NetBIOSError
            raise Failure('cannot connect to %s:%d: %s' % (host, port, e))
        # impacket enforces SMB3 encryption whenever the server offers it;
        # smb2q measures the plain data path.
        self.c._Connection['SupportsEncryption'] = False
        try:
            self.c.login(user, password, domain)
        except smb3.SessionError as e:
            raise Failure('session setup as %r failed: %s' % (
                user, status_str(e.get_error_code())))
        try:
            self.tid = self.c.connectTree(share)
        except smb3.SessionError as e:
            raise Failure('tree connect to share %r failed: %s' % (
                share, status_str(e.get_error_code())))
        if self.c._Session['SessionFlags'] & s3.SMB2_SESSION_FLAG_ENCRYPT_DATA:
            raise Failure('the server requires encryption; smb2q does not '
                          'support encrypted sessions')
        self.sock = self.c._NetBIOSSession.get_socket()
        self.credits = 1            # conservative: what we know we hold
        self.dialect = self.c._Connection['Dialect']
        self.multicredit = self.c._Connection['SupportsMultiCredit']
        self.interims = 0
        self.pending = {}           # message id -> request record
        self.server_pid = local_peer_pid(self.sock)
        self.breaks = []            # breaks received (and answered)
        self.break_delay = 0.0
        self.t0 = time.monotonic()
        self.acked = 0              # bytes written, acknowledged in order
        # From here on every request goes out through _send_packet, which
        # keeps reading while it sends (see there).
        self.frames = collections.deque()   # received SMB2 messages
        self.rx_buf = bytearray(4)  # the NetBIOS header or frame being read
        self.rx_spare = {}          # length: frames read and done with
        self.rx_got = 0
        self.rx_hdr = True
        self.rx_skip = False
        self.rx_discard = False     # abandon: drop what arrives
        self.c._NetBIOSSession.send_packet = self._send_packet
        # A request's header and a large body go out in two send() calls:
        # without TCP_NODELAY, Nagle's algorithm holds the second until the
        # first is acknowledged (a 40 ms delayed ACK per request).
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    # -- transport ---------------------------------------------------------
    #
    # Sending and receiving are interleaved: smbd stops reading requests
    # while more than max credits / 16 (512) responses wait in its send
    # queue (interim responses count), so a client that blocks in send()
    # without reading can deadlock with it (deep windows of writes, or
    # abandon's unread responses).  _send_packet writes with select() and
    # receives whatever arrives meanwhile; recv_frame() hands out the
    # received frames in order.

    def _wait(self, deadline, write):
        left = deadline - time.monotonic()
        if left <= 0:
            return None, None
        r, w, _ = select.select([self.sock], [self.sock] if write else [],
                                [], left)
        return bool(r), bool(w)

    def _fill(self):
        """Receive what the socket has, without blocking, straight into
        the buffer of the frame being assembled; complete frames go to
        self.frames."""
        self.sock.setblocking(False)
        while True:
            buf = self.rx_buf
            try:
                k = self.sock.recv_into(memoryview(buf)[self.rx_got:])
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionResetError:
                raise ServerClosed('the server reset the connection (%d '
                                   'requests outstanding)' %
                                   len(self.pending))
            if k == 0:
                raise ServerClosed('the server closed the connection (%d '
                                   'requests outstanding)' %
                                   len(self.pending))
            self.rx_got += k
            if self.rx_got < len(buf):
                continue
            if self.rx_hdr:
                (word,) = NBT.unpack(buf)
                length = word & (0x1ffff if word >> 24 else 0xffffff)
                if word >> 24 or length == 0:   # keepalive and the like
                    self.rx_buf = bytearray(length) if length else \
                        bytearray(4)
                    self.rx_skip = True
                    self.rx_hdr = not length
                else:
                    spare = self.rx_spare.get(length)
                    self.rx_buf = spare.pop() if spare else \
                        bytearray(length)
                    self.rx_skip = False
                    self.rx_hdr = False
            else:
                if not self.rx_skip and not self.rx_discard:
                    self.frames.append(buf)
                self.rx_buf = bytearray(4)
                self.rx_hdr = True
            self.rx_got = 0

    def _send_all(self, data):
        view = memoryview(data)
        sent = 0
        deadline = time.monotonic() + self.timeout
        self.sock.setblocking(False)
        while sent < len(view):
            r, w = self._wait(deadline, True)
            if r is None:
                raise Failure('could not send for %.0f s (%d requests '
                              'outstanding): the server stopped reading'
                              % (self.timeout, len(self.pending)))
            if r:
                self._fill()
            if w:
                try:
                    sent += self.sock.send(view[sent:sent + (4 << 20)])
                except (BlockingIOError, InterruptedError):
                    pass
                except (BrokenPipeError, ConnectionResetError):
                    raise ServerClosed('the server closed the connection '
                                       'while a request was being sent '
                                       '(%d requests outstanding)' %
                                       len(self.pending))

    def _spare(self, view, frame, whole, depth):
        """A READ response's frame, checked and hashed, is kept to receive
        a later frame of the same length into (a fresh buffer of several
        MiB costs more than the check): only a frame that held nothing
        but this response, and at most 2 * depth + 1 of each length (the
        responses in flight, those kept until the ones before them are
        in, and the one being received)."""
        view.release()
        if not whole:
            return
        spare = self.rx_spare.setdefault(len(frame), [])
        if len(spare) <= 2 * depth:
            spare.append(frame)

    def _send_packet(self, data):
        """Replaces impacket's NetBIOSTCPSession.send_packet: a session
        message header (type 0, 24-bit length), then the SMB2 message."""
        if len(data) < (256 << 10):
            self._send_all(NBT.pack(len(data)) + data)
        else:
            self._send_all(NBT.pack(len(data)))
            self._send_all(data)

    def quiet(self):
        """Nothing of ours in flight or unread: impacket's own calls
        (create, close) may read the socket directly."""
        if self.pending or self.frames or self.rx_got or not self.rx_hdr:
            raise Failure('internal: %d requests outstanding, %d responses '
                          'unread before a synchronous call' % (
                              len(self.pending), len(self.frames)))
        self.sock.settimeout(self.timeout)

    # -- low level ---------------------------------------------------------

    def charge(self, length):
        if self.dialect == s3.SMB2_DIALECT_002 or not self.multicredit:
            return 1
        return max(1, (length + 65535) // 65536)

    def send(self, packet, charge):
        """Send one request with impacket's sendSMB; returns its message
        id.  Keeps impacket's sequence window past the CreditCharge ids
        this request consumes."""
        if charge > self.credits:
            raise Failure('internal: sending a request of %d credits while '
                          'holding %d' % (charge, self.credits))
        packet['CreditCharge'] = charge
        mid = self.c.sendSMB(packet)
        self.c._Connection['SequenceWindow'] += charge - 1
        self.credits -= charge
        return mid

    def recv_frame(self):
        """The next SMB2 message (a NetBIOS session message) as a
        bytearray."""
        deadline = time.monotonic() + self.timeout
        while not self.frames:
            r, _ = self._wait(deadline, False)
            if r is None:
                mids = sorted(self.pending)
                raise Failure(
                    'no response from the server for %.0f s with %d '
                    'requests outstanding (message ids %s%s): a lost '
                    'completion?' % (self.timeout, len(self.pending),
                                     mids[:8], '...' if len(mids) > 8 else ''))
            self._fill()
        return self.frames.popleft()

    def recv_responses(self):
        """Read one frame; yield (message id, status, frame, start, end)
        for each final response in it (compound chains included; the
        response is frame[start:end]).  Every response's credit grant is
        counted; interim responses are consumed here and not yielded."""
        frame = self.recv_frame()
        if frame[:4] == b'\xfdSMB':
            raise Failure('encrypted response received; not supported')
        pos = 0
        while True:
            h = HDR.unpack_from(frame, pos)
            if h[0] != b'\xfeSMB':
                raise Failure('not an SMB2 response (protocol id %r)' % h[0])
            status, credit, flags, nxt, mid = h[3], h[5], h[6], h[7], h[8]
            self.credits += credit
            if mid == 0xffffffffffffffff:
                self._on_break(frame, pos)  # unsolicited: a break
            elif status == STATUS_PENDING and flags & FLAG_ASYNC:
                self.interims += 1
                if mid in self.pending:
                    self.pending[mid]['interim'] = True
            else:
                end = pos + nxt if nxt else len(frame)
                yield mid, status, frame, pos, end
            if not nxt:
                break
            pos += nxt

    def _on_break(self, frame, pos):
        """A lease or oplock break notification: record and answer it
        (after break_delay seconds).  The acknowledgement's response is
        collected like any other (pending 'what': 'break_ack')."""
        (cmd,) = struct.unpack_from('<H', frame, pos + 12)
        if cmd != s3.SMB2_OPLOCK_BREAK:
            return
        (size,) = struct.unpack_from('<H', frame, pos + 64)
        t = round(time.monotonic() - self.t0, 3)
        if size == BREAK_NOTIFY_LEASE:
            flags, key, cur, new = struct.unpack_from('<I16sII', frame,
                                                      pos + 64 + 4)
            rec = {'type': 'lease', 'from': lease_str(cur),
                   'to': lease_str(new), 't': t, 'acked': False}
            self.breaks.append(rec)
            self.lease_state = new
            if not flags & 0x01:        # SMB2_NOTIFY_BREAK_LEASE_FLAG_ACK_REQUIRED
                return
            body = LEASE_ACK.pack(36, 0, 0, key, new, 0)
        elif size == BREAK_NOTIFY_OPLOCK:
            level, _r, _r2, fid = struct.unpack_from('<BBI16s', frame,
                                                     pos + 64 + 2)
            rec = {'type': 'oplock', 'to': oplock_str(level), 't': t,
                   'acked': False}
            self.breaks.append(rec)
            held = getattr(self, 'oplock_held', 'none')
            self.oplock_held = 'none' if level == 0 else oplock_str(level)
            if held not in ('exclusive', 'batch'):
                # a level II oplock (or one this Conn's own create did not
                # ask for: impacket's) is broken without an acknowledgement
                return
            body = OPLOCK_ACK.pack(24, level, 0, 0, fid)
        else:
            return
        if self.break_delay > 0:
            time.sleep(self.break_delay)
        if self.credits < 1:
            raise Failure('no credit left to answer a break')
        # the time the acknowledgement leaves, taken before the send: the
        # server may complete what waited for it (another client's open)
        # before this thread runs again after the send
        sending = time.monotonic() - self.t0
        mid = self.send(RawPacket(s3.SMB2_OPLOCK_BREAK, self.tid, body), 1)
        self.pending[mid] = {'what': 'break_ack', 'rec': rec}
        rec['acked'] = round(sending, 3)

    def _break_ack_done(self, rq, status):
        if status != STATUS_SUCCESS:
            raise Failure('break acknowledgement failed: %s' %
                          status_str(status))

    def create(self, path, access, disp, oplock=None, lease_key=None):
        """CREATE asking for an oplock level (name of OPLOCK_LEVELS) or,
        with lease_key (16 bytes), an RWH lease.  Returns (file id,
        granted as text)."""
        name = path.encode('utf-16le')
        level = OPLOCK_LEVELS['lease'] if lease_key else \
            OPLOCK_LEVELS[oplock or 'none']
        ctx = b''
        ctx_off = 0
        if lease_key:
            ctx = LEASE_CTX.pack(0, 16, 4, 0, 24, 32, b'RqLs', lease_key,
                                 LEASE_R | LEASE_H | LEASE_W, 0, 0)
        buf = name or b'\0'
        if ctx:
            pad = (-(64 + 56 + len(buf))) % 8
            buf += b'\0' * pad
            ctx_off = 64 + 56 + len(buf)
            buf += ctx
        body = CREATE_REQ.pack(
            57, 0, level, 2, 0, 0, access, s3.FILE_ATTRIBUTE_NORMAL,
            s3.FILE_SHARE_READ | s3.FILE_SHARE_WRITE | s3.FILE_SHARE_DELETE,
            disp, s3.FILE_NON_DIRECTORY_FILE, 64 + 56, len(name), ctx_off,
            len(ctx)) + buf
        status, frame, pos, end = self._exchange(s3.SMB2_CREATE, body,
                                                 'create')
        if status != STATUS_SUCCESS:
            raise Failure('create %r on share %r failed: %s' % (
                path, self.share, status_str(status)))
        got = frame[pos + 66]
        fid = bytes(frame[pos + 128:pos + 144])
        coff, clen = struct.unpack_from('<II', frame, pos + 144)
        granted = 'oplock ' + oplock_str(got)
        if got == OPLOCK_LEVELS['lease']:
            granted = 'lease none'
            p = pos + coff
            while clen and p < end:
                nxt, noff, nlen, _r, doff, dlen = \
                    struct.unpack_from('<IHHHHI', frame, p)
                if bytes(frame[p + noff:p + noff + nlen]) == b'RqLs':
                    (st,) = struct.unpack_from('<I', frame,
                                               p + doff + 16)
                    granted = 'lease ' + lease_str(st)
                    self.lease_state = st
                if not nxt:
                    break
                p += nxt
        elif got == 0:
            granted = 'none'
        return fid, granted

    def ensure_credits(self, need):
        """ECHO until we hold `need` credits."""
        if need > MAX_CREDITS - CREDIT_RESERVE:
            raise Usage('this run needs %d credits in flight; Samba grants '
                        'at most %d' % (need, MAX_CREDITS))
        rounds = 0
        while self.credits < need:
            n = max(1, min(self.credits, 32))
            mids = set()
            for _ in range(n):
                p = self.c.SMB_PACKET()
                p['Command'] = s3.SMB2_ECHO
                p['Data'] = s3.SMB2Echo()
                mid = self.send(p, 1)
                mids.add(mid)
                self.pending[mid] = {'what': 'echo'}
            while mids:
                for mid, status, _f, _p, _e in self.recv_responses():
                    if mid not in mids:
                        raise Failure('response to unexpected message id %d'
                                      % mid)
                    mids.discard(mid)
                    self.pending.pop(mid, None)
                    if status != STATUS_SUCCESS:
                        raise Failure('ECHO failed: %s' % status_str(status))
            rounds += 1
            if rounds > 200:
                raise Failure('the server does not grant credits: holding %d '
                              'after %d rounds of ECHO, need %d' % (
                                  self.credits, rounds, need))

    # -- file handles ------------------------------------------------------

    def open(self, path, write, create, oplock=None, lease_key=None):
        path = path.replace('/', '\\').lstrip('\\')
        access = s3.FILE_READ_DATA | s3.FILE_READ_ATTRIBUTES | s3.SYNCHRONIZE
        if write:
            access |= (s3.FILE_WRITE_DATA | s3.FILE_APPEND_DATA |
                       s3.FILE_WRITE_ATTRIBUTES)
        disp = s3.FILE_OVERWRITE_IF if create else s3.FILE_OPEN
        if oplock or lease_key:
            fid, self.granted = self.create(path, access, disp, oplock,
                                            lease_key)
            self.oplock_held = self.granted[len('oplock '):] \
                if self.granted.startswith('oplock ') else 'none'
            return fid
        self.granted = 'none'
        self.oplock_held = 'none'
        self.quiet()
        # impacket's create() and close() are plain request/response calls
        # of charge 1 made with nothing of ours in flight; each response
        # grants at least the credit it cost, so our count (a lower bound
        # of what we hold) stays right without counting them.
        try:
            fid = self.c.create(self.tid, path, access,
                                s3.FILE_SHARE_READ | s3.FILE_SHARE_WRITE |
                                s3.FILE_SHARE_DELETE,
                                s3.FILE_NON_DIRECTORY_FILE, disp,
                                s3.FILE_ATTRIBUTE_NORMAL)
        except smb3.SessionError as e:
            raise Failure('create %r on share %r failed: %s' % (
                path, self.share, status_str(e.get_error_code())))
        return fid

    def await_break(self, secs):
        """Read (and answer) what the server sends until a break has come
        or secs have passed, then collect the acknowledgements still out;
        a connection the server closed ends the wait."""
        deadline = time.monotonic() + secs
        while not self.breaks and time.monotonic() < deadline:
            self.timeout = max(1, deadline - time.monotonic())
            try:
                for _ in self.recv_responses():
                    pass
            except Failure:
                break
        self.settle()

    def settle(self):
        """Collect the answers to break acknowledgements still out."""
        while self.pending:
            for mid, status, _f, _p, _e in self.recv_responses():
                rq = self.pending.pop(mid, None)
                if rq is None or rq.get('what') != 'break_ack':
                    raise Failure('response to unexpected message id %d'
                                  % mid)
                self._break_ack_done(rq, status)

    def simple(self, command, body, what):
        """One request of charge 1, answered (break acknowledgements are
        collected meanwhile).  Returns the NTSTATUS."""
        self.settle()
        return self._exchange(command, body, what)[0]

    def _exchange(self, command, body, what):
        """Send one request of charge 1 and wait for its response, answering
        break acknowledgements meanwhile: (status, frame, start, end)."""
        if self.credits < 1:
            self.ensure_credits(1)
        mid = self.send(RawPacket(command, self.tid, body), 1)
        self.pending[mid] = {'what': what}
        while True:
            for rmid, status, frame, pos, end in self.recv_responses():
                rq = self.pending.pop(rmid, None)
                if rq is None:
                    raise Failure('response to unknown message id %d' %
                                  rmid)
                if rq.get('what') == 'break_ack':
                    self._break_ack_done(rq, status)
                    continue
                return status, frame, pos, end

    def flush(self, fid):
        """SMB2 FLUSH; returns the NTSTATUS."""
        return self.simple(s3.SMB2_FLUSH, struct.pack('<HHI16s', 24, 0, 0,
                                                      fid), 'flush')

    def write(self, fid, off, data, flags=0):
        """One SMB2 WRITE (flags: SMB2_WRITEFLAG_*); returns the
        NTSTATUS."""
        return self.simple(s3.SMB2_WRITE, WRITE_REQ.pack(
            49, 64 + 48, len(data), off, fid, 0, 0, 0, 0, flags) + data,
            'write')

    def close_status(self, fid):
        """SMB2 CLOSE; returns the NTSTATUS."""
        return self.simple(s3.SMB2_CLOSE, struct.pack('<HHI16s', 24, 0, 0,
                                                      fid), 'close')

    def close(self, fid):
        if self.breaks or getattr(self, 'granted', 'none') != 'none':
            status = self.close_status(fid)
            if status != STATUS_SUCCESS:
                raise Failure('close failed: %s' % status_str(status))
            return
        self.quiet()
        try:
            self.c.close(self.tid, fid)
        except smb3.SessionError as e:
            raise Failure('close failed: %s' % status_str(e.get_error_code()))

    def drop(self):
        """Close the TCP connection without tree disconnect or logoff: a
        gfapi share's tree disconnect waits for glfs_fini (~10 s with the
        stock module), and smbd tears the session down on disconnect
        anyway."""
        try:
            self.sock.close()
        except OSError:
            pass

    def abort(self):
        """Close the socket abruptly (RST), whatever is in flight."""
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                 struct.pack('ii', 1, 0))
        except OSError:
            pass
        self.sock.close()

    # -- requests ----------------------------------------------------------

    def read_packet(self, fid, off, n):
        return RawPacket(s3.SMB2_READ, self.tid, READ_REQ.pack(
            49, 0x50, 0, n, off, fid, 0, 0, 0, 0, 0, 0))

    def write_packet(self, fid, off, data, flags=0):
        return RawPacket(s3.SMB2_WRITE, self.tid, WRITE_REQ.pack(
            49, 64 + 48, len(data), off, fid, 0, 0, 0, 0, flags) + data)

    def prepare_reads(self, req, depth, pattern, start):
        """Pay before the timed part what the first READ responses would
        otherwise pay inside it, the same for every server: the cipher's
        first use (the library sets itself up then: about 50 ms on a test
        machine) and 2 * depth + 1 receive buffers of a response's size,
        zeroed, so that their pages are in place (a fresh 1 MiB buffer:
        2.5 ms of page faults there; _spare then reuses them).  Without
        it a 64 MiB read at 16 x 1 MiB in flight spent a third of its
        time on the client."""
        if req <= 0:
            return
        pattern.expect(start, req)
        spare = self.rx_spare.setdefault(READ_DATA_OFFSET + req, [])
        while len(spare) <= 2 * depth:
            spare.append(bytearray(READ_DATA_OFFSET + req))

    def pipeline(self, fid, kind, size, req, depth, pattern, start=0,
                 write_flags=0):
        """Move `size` bytes with `depth` requests of `req` bytes in
        flight.  Writes send the pattern; reads check every byte against
        it.  Returns (sha256 hex of the stream in offset order, seconds,
        max outstanding observed)."""
        assert kind in ('read', 'write')
        self.ensure_credits(depth * self.charge(req) + 1)
        h = hashlib.sha256()
        hashed = 0                  # stream hashed up to here
        done = {}                   # completed read data beyond `hashed`
        acked = set()               # completed writes beyond self.acked
        nxt = 0
        size += start
        nxt = start
        hashed = start
        self.acked = start
        maxout = 0
        pend = self.pending
        if kind == 'read':
            self.prepare_reads(min(req, size - start), depth, pattern, start)
        t0 = time.monotonic()
        while nxt < size or pend:
            while nxt < size and len(pend) < depth:
                n = min(req, size - nxt)
                ch = self.charge(n)
                if ch > self.credits:
                    if not pend:
                        raise Failure('out of credits: holding %d, need %d'
                                      % (self.credits, ch))
                    break
                if kind == 'write':
                    data = pattern.get(nxt, n)
                    h.update(data)
                    pkt = self.write_packet(fid, nxt, data, write_flags)
                else:
                    pkt = self.read_packet(fid, nxt, n)
                mid = self.send(pkt, ch)
                pend[mid] = {'off': nxt, 'len': n}
                nxt += n
                if len(pend) > maxout:
                    maxout = len(pend)
            for mid, status, frame, pos, end in self.recv_responses():
                rq = pend.pop(mid, None)
                if rq is None:
                    raise Failure('response to unknown message id %d '
                                  '(status %s)' % (mid, status_str(status)))
                if rq.get('what') == 'break_ack':
                    self._break_ack_done(rq, status)
                    continue
                off, n = rq['off'], rq['len']
                if status != STATUS_SUCCESS:
                    raise Failure('%s of %d bytes at offset %d failed: %s' % (
                        kind.upper(), n, off, status_str(status)))
                if kind == 'write':
                    (count,) = struct.unpack_from('<I', frame, pos + 68)
                    if count != n:
                        raise Failure('WRITE at offset %d: %d of %d bytes '
                                      'written' % (off, count, n))
                    acked.add(off)
                    while self.acked in acked:
                        acked.discard(self.acked)
                        self.acked = min(self.acked + req, size)
                    continue
                doff, = struct.unpack_from('<B', frame, pos + 66)
                dlen, = struct.unpack_from('<I', frame, pos + 68)
                got = memoryview(frame)[pos + doff:pos + doff + dlen]
                if dlen != n:
                    raise Failure('READ at offset %d: short read, %d of %d '
                                  'bytes' % (off, dlen, n))
                exp = pattern.expect(off, n)
                # bytearray.startswith compares in place (memcmp): no
                # copy of the data, unlike slicing or comparing views
                if len(got) != n or not frame.startswith(exp, pos + doff):
                    got = bytes(got)
                    exp = bytes(exp)
                    i = first_mismatch(exp, got)
                    raise Failure(
                        'MISMATCH at offset %d (in the READ of %d bytes at '
                        'offset %d): expected %s, got %s' % (
                            off + i, n, off, exp[i:i + 16].hex(),
                            got[i:i + 16].hex()))
                whole = pos == 0 and end == len(frame)
                if off == hashed:
                    h.update(got)
                    hashed += n
                    self._spare(got, frame, whole, depth)
                    while hashed in done:
                        b, bframe, bwhole = done.pop(hashed)
                        h.update(b)
                        hashed += len(b)
                        self._spare(b, bframe, bwhole, depth)
                else:
                    done[off] = (got, frame, whole)
        secs = time.monotonic() - t0
        self.window = (t0, t0 + secs)
        if kind == 'read':
            assert hashed == size and not done, (hashed, size, len(done))
        nreq = (size - start + req - 1) // req
        if maxout < min(depth, nreq):
            raise Failure('%s: at most %d requests were outstanding, never '
                          'the %d asked for' % (kind, maxout,
                                                min(depth, nreq)))
        return h.hexdigest(), secs, maxout

    def flush_packet(self, fid):
        return RawPacket(s3.SMB2_FLUSH, self.tid,
                         struct.pack('<HHI16s', 24, 0, 0, fid))

    def sustain(self, fid, size, req, nread, nwrite, nflush, pattern,
                duration=0.0):
        """Keep `nread` reads, `nwrite` writes (of `req` bytes, cycling
        through the first `size` bytes of the file) and `nflush` FLUSH
        requests outstanding, sending the next one of a kind as soon as
        one is answered, until the server ends the connection or, with a
        duration, that many seconds have passed.  Read data is not checked
        (the writes change it meanwhile).  Once every kind first has its
        full number outstanding, one line goes to stderr ("smb2q:
        sustaining ..."), so that a caller knows the I/O is in flight.
        Returns what was sent, answered and outstanding at the end."""
        span = max(req, size)
        want = {'read': nread, 'write': nwrite, 'flush': nflush}
        self.ensure_credits((nread + nwrite) * self.charge(req) + nflush + 1)
        out = {k: 0 for k in want}
        sent = {k: 0 for k in want}
        answered = {k: 0 for k in want}
        failed = collections.Counter()
        nxt = {'read': 0, 'write': span // 2}
        pend = self.pending
        announced = None
        ended = None
        t0 = time.monotonic()
        try:
            while True:
                for kind in ('read', 'write', 'flush'):
                    while out[kind] < want[kind]:
                        if kind == 'flush':
                            n, pkt = 0, self.flush_packet(fid)
                        else:
                            off = nxt[kind] % span
                            n = min(req, span - off)
                            nxt[kind] = off + n
                            pkt = self.read_packet(fid, off, n) \
                                if kind == 'read' else \
                                self.write_packet(fid, off,
                                                  pattern.get(off, n))
                        ch = self.charge(n)
                        if ch > self.credits:
                            break
                        mid = self.send(pkt, ch)
                        pend[mid] = {'what': kind}
                        out[kind] += 1
                        sent[kind] += 1
                if announced is None and out == want:
                    announced = round(time.monotonic() - t0, 3)
                    sys.stderr.write(
                        'smb2q: sustaining %d reads, %d writes and %d '
                        'flushes in flight (server pid %s)\n' % (
                            nread, nwrite, nflush, self.server_pid))
                    sys.stderr.flush()
                if duration and time.monotonic() - t0 > duration:
                    ended = 'duration of %.1f s reached' % duration
                    break
                for mid, status, _f, _p, _e in self.recv_responses():
                    rq = pend.pop(mid, None)
                    if rq is None:
                        raise Failure('response to unknown message id %d '
                                      '(status %s)' % (mid,
                                                       status_str(status)))
                    if rq.get('what') == 'break_ack':
                        self._break_ack_done(rq, status)
                        continue
                    kind = rq['what']
                    out[kind] -= 1
                    answered[kind] += 1
                    if status != STATUS_SUCCESS:
                        failed['%s %s' % (kind, status_name(status))] += 1
        except ServerClosed as e:
            ended = str(e)
        return {'sent': sent, 'answered': answered,
                'outstanding_at_end': out, 'failed': dict(failed),
                'full_after_seconds': announced,
                'seconds': round(time.monotonic() - t0, 3),
                'ended': ended, 'server_ended': duration == 0 or
                not ended.startswith('duration')}

    def abandon(self, fid, size, req, depth, pattern):
        """Put `depth` reads and `depth` writes in flight, then reset the
        connection without waiting for any response.  What arrives while
        the requests go out is drained and dropped: smbd stops reading
        requests while its send queue is long, and would never see the
        last ones otherwise."""
        self.ensure_credits(2 * depth * self.charge(req) + 1)
        sent = {'read': 0, 'write': 0}
        span = max(req, size)
        self.rx_discard = True
        for i in range(depth):
            off = (i * req) % span
            n = min(req, span - off)
            self.send(self.read_packet(fid, off, n), self.charge(n))
            sent['read'] += 1
        for i in range(depth):
            off = (i * req) % span
            n = min(req, span - off)
            self.send(self.write_packet(fid, off, pattern.get(off, n)),
                      self.charge(n))
            sent['write'] += 1
        # Responses that arrived while sending were dropped unread; none is
        # waited for.  SO_LINGER 0: the close sends an RST.
        self.abort()
        return sent


def build_parser():
    p = argparse.ArgumentParser(
        prog='smb2q',
        description='SMB2 client with exactly DEPTH requests in flight; '
                    'writes and verifies a deterministic data pattern.')
    p.add_argument('--host', required=True)
    p.add_argument('--port', type=int, default=445)
    p.add_argument('--user', required=True)
    p.add_argument('--password', required=True)
    p.add_argument('--domain', default='')
    p.add_argument('--share', required=True)
    p.add_argument('--file', required=True,
                   help='path of the file inside the share')
    p.add_argument('--size', required=True, help='bytes (K/M/G suffixes)')
    p.add_argument('--depth', required=True, type=int,
                   help='requests kept in flight')
    p.add_argument('--req-size', required=True,
                   help='bytes per request (K/M/G suffixes, at most 8M)')
    p.add_argument('--seed', default='0', help='pattern seed (default 0)')
    p.add_argument('--dialect', choices=('3.0', '2.1'), default='3.0')
    p.add_argument('--timeout', type=float, default=120.0,
                   help='seconds to wait for any response (default 120)')
    p.add_argument('--lease', action='store_true',
                   help='ask for an RWH lease (a v1 lease context)')
    p.add_argument('--lease-key', default=None,
                   help='the lease key, 32 hex digits (default: random)')
    p.add_argument('--oplock', choices=('exclusive', 'batch'), default=None,
                   help='ask for an exclusive or batch oplock')
    p.add_argument('--break-delay', type=float, default=0.0,
                   help='seconds to wait before answering a break')
    p.add_argument('--flush', action='store_true',
                   help='send FLUSH after the writes, before CLOSE')
    p.add_argument('--reads', type=int, default=None,
                   help='sustain: reads kept outstanding (default --depth)')
    p.add_argument('--writes', type=int, default=None,
                   help='sustain: writes kept outstanding (default --depth)')
    p.add_argument('--flushes', type=int, default=2,
                   help='sustain: FLUSH requests kept outstanding '
                   '(default 2)')
    p.add_argument('--duration', type=float, default=0.0,
                   help='sustain: stop after this many seconds (default: '
                   'when the server ends the connection)')
    p.add_argument('--linger', type=float, default=0.0,
                   help='read, write, roundtrip: seconds to stay connected '
                   'after the last CLOSE (default 0)')
    p.add_argument('action', choices=('write', 'read', 'roundtrip',
                                      'abandon', 'sustain'))
    return p


def mbps(size, secs):
    return round(size / secs / 1e6, 1) if secs > 0 else None


def run(args):
    size = parse_size(args.size, '--size')
    req = parse_size(args.req_size, '--req-size')
    if size < 1:
        raise Usage('--size must be at least 1 byte')
    if not 1 <= req <= MAX_REQ:
        raise Usage('--req-size must be between 1 and 8M, not %d' % req)
    if not 1 <= args.depth <= 4096:
        raise Usage('--depth must be between 1 and 4096, not %d' % args.depth)
    if not 0 < args.port < 65536:
        raise Usage('--port must be 1-65535')
    charge = max(1, (req + 65535) // 65536)
    need = args.depth * charge * (2 if args.action == 'abandon' else 1)
    if args.action == 'sustain':
        for k in ('reads', 'writes'):
            if getattr(args, k) is None:
                setattr(args, k, args.depth)
            if not 0 <= getattr(args, k) <= 4096:
                raise Usage('--%s must be between 0 and 4096' % k)
        if not 0 <= args.flushes <= 256:
            raise Usage('--flushes must be between 0 and 256')
        if args.reads + args.writes + args.flushes == 0:
            raise Usage('sustain: nothing to keep in flight')
        need = (args.reads + args.writes) * charge + args.flushes
    if need + 1 > MAX_CREDITS - CREDIT_RESERVE:
        raise Usage('--depth %d with --req-size %d needs %d credits in '
                    'flight; Samba grants at most %d' % (
                        args.depth, req, need, MAX_CREDITS))
    if smb3 is None:
        raise Failure('python3-impacket is not installed (run '
                      'scripts/install-deps)')
    if args.lease and args.oplock:
        raise Usage('--lease and --oplock exclude each other')
    lease_key = None
    if args.lease:
        try:
            lease_key = bytes.fromhex(args.lease_key) if args.lease_key \
                else os.urandom(16)
        except ValueError:
            lease_key = b''
        if len(lease_key) != 16:
            raise Usage('--lease-key must be 32 hex digits')
    if args.break_delay < 0:
        raise Usage('--break-delay must not be negative')
    if not 0 <= args.linger <= 60:
        raise Usage('--linger must be between 0 and 60 seconds')
    pattern = Pattern(args.seed)
    conn = Conn(args.host, args.port, args.user, args.password, args.share,
                args.dialect, args.domain, args.timeout)
    conn.break_delay = args.break_delay
    out = {'action': args.action, 'share': args.share, 'file': args.file,
           'size': size, 'depth': args.depth, 'req_size': req,
           'seed': args.seed, 'server_pid': conn.server_pid,
           'server_ppid': parent_pid(conn.server_pid)}
    try:
        if args.action == 'abandon':
            fid = conn.open(args.file, write=True, create=False)
            sent = conn.abandon(fid, size, req, args.depth, pattern)
            out.update({'reads_in_flight': sent['read'],
                        'writes_in_flight': sent['write']})
            return out
        if args.action == 'sustain':
            fid = conn.open(args.file, write=True, create=False,
                            oplock=args.oplock, lease_key=lease_key)
            out['granted'] = conn.granted
            out.update(conn.sustain(fid, size, req, args.reads, args.writes,
                                    args.flushes, pattern, args.duration))
            if out['server_ended']:
                conn.abort()
            else:
                conn.drop()
            return out
        phases = []
        if args.action in ('write', 'roundtrip'):
            phases.append('write')
        if args.action in ('read', 'roundtrip'):
            phases.append('read')
        for kind in phases:
            fid = conn.open(args.file, write=(kind == 'write'),
                            create=(kind == 'write'), oplock=args.oplock,
                            lease_key=lease_key)
            out[kind + '_granted'] = conn.granted
            digest, secs, maxout = conn.pipeline(fid, kind, size, req,
                                                 args.depth, pattern)
            if args.flush and kind == 'write':
                status = conn.flush(fid)
                if status != STATUS_SUCCESS:
                    raise Failure('FLUSH failed: %s' % status_str(status))
            conn.close(fid)
            out[kind + '_sha256'] = digest
            out[kind + '_seconds'] = round(secs, 3)
            out[kind + '_MBps'] = mbps(size, secs)
            out[kind + '_max_outstanding'] = maxout
            # the timed part on CLOCK_MONOTONIC, which every process of
            # the machine shares (a caller's CPU sampling window)
            out[kind + '_t_start'], out[kind + '_t_end'] = conn.window
        if args.action == 'roundtrip' and \
                out['write_sha256'] != out['read_sha256']:
            raise Failure('read back sha256 %s, wrote %s' % (
                out['read_sha256'], out['write_sha256']))
        out['sha256'] = out[phases[-1] + '_sha256']
        # == depth only if every phase reached it
        out['max_outstanding_observed'] = min(
            out[k + '_max_outstanding'] for k in phases)
        out['interim_responses'] = conn.interims
        out['granted'] = out[phases[0] + '_granted']
        out['breaks'] = conn.breaks
        if args.linger:
            time.sleep(args.linger)
        conn.drop()
        return out
    except BaseException:
        conn.abort()
        raise


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)      # exits 2 on bad arguments
    try:
        out = run(args)
    except Usage as e:
        print('smb2q: error: %s' % e, file=sys.stderr)
        return 2
    except Failure as e:
        print('smb2q: FAILED: %s' % e, file=sys.stderr)
        return 1
    except smb3.SessionError as e:
        print('smb2q: FAILED: %s' % status_str(e.get_error_code()),
              file=sys.stderr)
        return 1
    except (OSError, EOFError) as e:
        print('smb2q: FAILED: %s: %s' % (type(e).__name__, e),
              file=sys.stderr)
        return 1
    print(json.dumps(out, sort_keys=True))
    sys.stdout.flush()
    return 0


if __name__ == '__main__':
    sys.exit(main())
