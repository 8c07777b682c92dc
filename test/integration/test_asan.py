"""glusterfs2 under AddressSanitizer and UBSan in a real smbd.

Runs test/asan/run: a sanitizer build of the module (glusterfs2_asan, or
NAME_asan for a stack with GF2_STACK_MODULE=NAME, installed beside
glusterfs2.so) in a private smbd on its own port, clients
that disconnect with reads and writes in flight (smbclient killed in the
middle of large gets and puts, test/tools/smb2q abandon), checksummed
reads and writes, smbtorture smb2.read and smb2.rw.  The test passes when
the runner passes: every smbd child exits, the main smbd keeps serving, and
no ASan/UBSan report has a glusterfs2 frame.  The runner's output (the
offending reports, whole) is shown on failure; everything it leaves is in
.stack/asan/.

Takes about 30-60 s (the first run also builds build-asan/, ~20 s).
GF2_ASAN_PORT overrides the private smbd's port (by default the stack's
plus its offset in gf2_private_smbd.PORT_SLOTS).
"""

import os
import subprocess

from conftest import TOP


def test_asan_disconnects_with_io_in_flight(stack):
    p = subprocess.run([os.path.join(TOP, 'test', 'asan', 'run')],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, errors='replace',
                       timeout=600)
    out = p.stdout
    tail = [l for l in out.splitlines() if l.startswith(('FAIL', 'sanitizer'
                                                        ' reports:'))]
    assert p.returncode == 0, '\n'.join(tail) + '\n\n' + out[-60000:]
