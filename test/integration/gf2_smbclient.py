"""One smbclient process kept open on a private smbd's share gf2coh: one
client connection, so one smbd process, whose listings fill glusterfs2's
metadata cache.  (python-smbc cannot read DOS attributes; smbclient's ls
shows them.)

    sess = Session(srv)            # srv: a started PrivateSmbd
    out = sess.cmd('allinfo d\\\\f')
    sess.close()
"""

import os
import re
import select
import subprocess
import time


class Session:
    """One smbclient process kept open: one client connection, so one
    smbd process, whose listings fill glusterfs2's metadata cache.
    (python-smbc cannot read DOS attributes; smbclient's ls shows them.)"""

    def __init__(self, srv):
        env = srv.client_env()
        # smbclient runs commands one at a time only on a terminal
        self.m, slave = os.openpty()
        self.p = subprocess.Popen(
            ['smbclient', '-p', env['SMB_PORT'], '//127.0.0.1/gf2coh',
             '-U', '%s%%%s' % (env['SMB_USER'], env['SMB_PASS'])],
            stdin=slave, stdout=slave, stderr=slave, close_fds=True,
            start_new_session=True)
        os.close(slave)
        self.prompt()

    def prompt(self, timeout=60):
        buf = b''
        deadline = time.time() + timeout
        while not re.search(rb'smb: \S*> $', buf):
            left = deadline - time.time()
            assert left > 0, 'no smbclient prompt: %r' % buf[-2000:]
            r, _, _ = select.select([self.m], [], [], left)
            if r:
                chunk = os.read(self.m, 65536)
                assert chunk, 'smbclient ended: %r' % buf[-2000:]
                buf += chunk
        return buf.decode(errors='replace').replace('\r', '')

    def cmd(self, line):
        os.write(self.m, line.encode() + b'\n')
        return self.prompt()

    def ls(self, d):
        """{name: (attributes, size)} of directory d."""
        out = self.cmd('ls %s\\*' % d.replace('/', '\\'))
        got = {}
        for ln in out.splitlines():
            m = re.match(r'^  (\S+)\s+([A-Z]*)\s+(\d+)\s+\w{3} ', ln)
            if m and m.group(1) not in ('.', '..'):
                got[m.group(1)] = (m.group(2), int(m.group(3)))
        return got

    def info(self, path):
        """(attributes hex, size) by allinfo, or None if not found."""
        out = self.cmd('allinfo %s' % path.replace('/', '\\'))
        if 'NT_STATUS_OBJECT_NAME_NOT_FOUND' in out or \
                'NT_STATUS_NO_SUCH_FILE' in out:
            return None
        a = re.search(r'attributes: \S* \((\w+)\)', out)
        z = re.search(r'stream: \[::\$DATA\], (\d+) bytes', out)
        assert a, out
        return int(a.group(1), 16), int(z.group(1)) if z else 0

    def close(self):
        os.write(self.m, b'quit\n')
        try:
            self.p.wait(60)
        finally:
            os.close(self.m)
