"""smb2q's answer to a lease break, without a server: the time it records
as the acknowledgement's must not be later than the moment the
acknowledgement is handed to the socket.  A server completes what waited
for the acknowledgement (another client's open) as soon as it arrives; a
time taken after the send returns may come after that completion when the
acknowledging thread is descheduled, and a test comparing the two then
sees the open as completed before the acknowledgement.

    python3 -m pytest -v test/tools/test_smb2q_break.py
"""

import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import smb2q  # noqa: E402

SEND_TAKES = 0.05           # the sending thread held up this long


def lease_break_frame(cur, new):
    """An SMB2 header (64 bytes) with the OPLOCK_BREAK command, then a
    lease break notification asking for an acknowledgement."""
    hdr = bytearray(64)
    hdr[0:4] = b'\xfeSMB'
    struct.pack_into('<H', hdr, 12, smb2q.s3.SMB2_OPLOCK_BREAK)
    body = struct.pack('<HHI16sII', smb2q.BREAK_NOTIFY_LEASE, 0, 0x01,
                       b'k' * 16, cur, new)
    return bytes(hdr) + body + b'\0' * 20


def test_ack_time_is_taken_before_the_send():
    conn = smb2q.Conn.__new__(smb2q.Conn)
    conn.t0 = time.monotonic()
    conn.breaks = []
    conn.lease_state = 0
    conn.break_delay = 0
    conn.credits = 10
    conn.tid = 1
    conn.pending = {}
    entered = []

    def send(pkt, credits):
        entered.append(time.monotonic() - conn.t0)
        time.sleep(SEND_TAKES)
        return 7

    conn.send = send
    rwh = smb2q.LEASE_R | smb2q.LEASE_W | smb2q.LEASE_H
    conn._on_break(lease_break_frame(rwh, smb2q.LEASE_R | smb2q.LEASE_H), 0)
    assert entered, 'no acknowledgement was sent'
    assert len(conn.breaks) == 1
    rec = conn.breaks[0]
    assert rec['type'] == 'lease' and rec['from'] == 'RWH', rec
    assert conn.pending[7]['what'] == 'break_ack'
    # rounded to the millisecond: within half of one of the send's entry
    assert rec['acked'] is not False
    assert rec['acked'] <= entered[0] + 0.0005, (rec, entered)
