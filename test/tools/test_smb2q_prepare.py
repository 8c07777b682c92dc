"""smb2q's reads set up before the timed part: the receive buffers it
prepares must be the ones the first READ responses land in (a buffer of
the wrong length is never used, and every response then pays for a
fresh one inside the timed part), and preparing must not change what is
checked.  Without a server: the responses come through a socket pair.

    python3 -m pytest -v test/tools/test_smb2q_prepare.py
"""

import collections
import os
import socket
import struct
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import smb2q  # noqa: E402

REQ = 1 << 20
DEPTH = 16


def bare_conn(sock):
    conn = smb2q.Conn.__new__(smb2q.Conn)
    conn.sock = sock
    conn.pending = {}
    conn.frames = collections.deque()
    conn.rx_buf = bytearray(4)
    conn.rx_spare = {}
    conn.rx_got = 0
    conn.rx_hdr = True
    conn.rx_skip = False
    conn.rx_discard = False
    conn.timeout = 5.0
    return conn


def read_response(mid, data):
    """A READ response as Samba sends it: the 64-byte header, the 16-byte
    body (data offset 80), the data."""
    hdr = bytearray(64)
    hdr[0:4] = b'\xfeSMB'
    struct.pack_into('<H', hdr, 12, smb2q.s3.SMB2_READ)
    struct.pack_into('<Q', hdr, 24, mid)
    body = struct.pack('<HBBIII', 17, smb2q.READ_DATA_OFFSET, 0, len(data),
                       0, 0)
    return bytes(hdr) + body + data


def test_responses_land_in_the_prepared_buffers():
    a, b = socket.socketpair()
    try:
        conn = bare_conn(a)
        pattern = smb2q.Pattern(8000)
        conn.prepare_reads(REQ, DEPTH, pattern, 0)
        prepared = conn.rx_spare[smb2q.READ_DATA_OFFSET + REQ]
        assert len(prepared) == 2 * DEPTH + 1
        ids = {id(buf) for buf in prepared}
        data = bytes(pattern.generate(0, REQ))
        msg = read_response(1, data)
        # the socket pair holds less than a response: sent meanwhile
        sender = threading.Thread(target=lambda: [
            b.sendall(struct.pack('>I', len(msg)) + msg) for _ in range(3)])
        sender.start()
        for _ in range(3):
            frame = conn.recv_frame()
            assert id(frame) in ids, 'a READ response went to a fresh buffer'
            assert frame[smb2q.READ_DATA_OFFSET:] == data
        sender.join()
    finally:
        a.close()
        b.close()


def test_a_short_last_read_is_prepared_at_its_own_length():
    conn = bare_conn(None)
    conn.prepare_reads(5000, 4, smb2q.Pattern(1), 0)
    assert list(conn.rx_spare) == [smb2q.READ_DATA_OFFSET + 5000]
    assert len(conn.rx_spare[smb2q.READ_DATA_OFFSET + 5000]) == 9


def test_the_check_is_unchanged_after_preparing():
    pattern = smb2q.Pattern(8000)
    want = bytes(smb2q.Pattern(8000).generate(3 * REQ + 7, REQ))
    conn = bare_conn(None)
    conn.prepare_reads(REQ, DEPTH, pattern, 0)
    assert bytes(pattern.expect(3 * REQ + 7, REQ)) == want
