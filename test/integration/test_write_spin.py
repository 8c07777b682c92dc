"""Large writes never spin in smbd's main loop.

  - test_transport_bound_to_libglusterfs: a private smbd (the stack's
    port plus its own offset, or GF2_TRANSPORT_PORT) run with the dynamic linker's binding log
    (LD_DEBUG=bindings) serves one tree connect to a glusterfs2 share;
    Gluster's socket transport (rpc-transport/socket.so) must have bound
    sys_writev to libglusterfs, not to Samba's libsys-rw;
  - test_put_does_not_spin_in_main_loop: the behaviour that binding buys,
    measured through the stack's smbd (below).


A pipelining client (smbclient put) sends 8 MiB writes, more than a brick
socket takes at once.  Gluster's socket transport queues the rest of such
a request and lets its event threads send it when the socket drains, but
only if it calls libglusterfs' own sys_writev: bound to Samba's (which
retries writev() for as long as it fails with EAGAIN), the transport
spins in writev() in the thread that submitted the write, smbd's main
loop, which then reads no SMB request and answers nothing until the
brick has read almost all of it (gf2_transport.c).

The test: one smbclient session to a share, the serving smbd's main
thread traced with `strace -c -e trace=writev` (that thread only) while
the session puts PUT_MB MiB in 8 MiB writes.  A transport that queues
what the socket does not take fails at most one writev() per request;
a spinning one fails one per retry, hundreds or thousands per put.  So
the failed writev() calls of that thread must stay under MAX_FAILED,
twice the number of requests.  The file's checksum is checked on the FUSE
mount.  GF2_SPIN_SHARE names another share (glusterfs2-base: an older
build, to show the test fails without the binding).
"""

import glob
import hashlib
import os
import re
import signal
import subprocess
import time

import pytest

from gf2_private_smbd import PrivateSmbd, private_port

PUT_MB = 256
MAX_FAILED = 2 * (PUT_MB // 8)
SHARE = os.environ.get('GF2_SPIN_SHARE', 'glusterfs2')


def smbd_children(stack):
    with open(os.path.join(stack['SMB_LOGDIR'], 'run', 'smbd.pid')) as f:
        parent = int(f.read().split()[0])
    p = subprocess.run(['pgrep', '-P', str(parent)], stdout=subprocess.PIPE,
                       universal_newlines=True)
    return set(int(x) for x in p.stdout.split())


def traced(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('TracerPid:'):
                return int(line.split()[1]) != 0
    return False


def pattern_file(path, mb):
    block = hashlib.sha256(b'glusterfs2 write spin').digest() * (1 << 15)
    h = hashlib.sha256()
    with open(path, 'wb') as f:
        for i in range(mb):
            chunk = (b'%08d' % i) + block[8:]
            f.write(chunk)
            h.update(chunk)
    return h.hexdigest()


def test_put_does_not_spin_in_main_loop(stack, tmp_path):
    src = '/dev/shm/gf2-spin-%d' % os.getpid()
    name = 'gf2-spin-%d.bin' % os.getpid()
    want = pattern_file(src, PUT_MB)
    before = smbd_children(stack)
    client = subprocess.Popen(
        ['smbclient', '//%s/%s' % (stack['SMB_HOST'], SHARE),
         '-p', stack['SMB_PORT'],
         '-U', '%s%%%s' % (stack['SMB_USER'], stack['SMB_PASS'])],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, universal_newlines=True)
    tracer = None
    try:
        # the session's smbd is the child that appears now
        deadline = time.time() + 30
        new = set()
        while time.time() < deadline and not new:
            time.sleep(0.2)
            new = smbd_children(stack) - before
        assert len(new) == 1, 'serving smbd not found: %s' % new
        pid = new.pop()
        report = tmp_path / 'strace.txt'
        tracer = subprocess.Popen(
            ['strace', '-c', '-e', 'trace=writev', '-o', str(report),
             '-p', str(pid)], stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline and not traced(pid):
            time.sleep(0.1)
        assert traced(pid), 'strace did not attach to %d' % pid

        out, _ = client.communicate('put %s %s\nquit\n' % (src, name),
                                    timeout=600)
        assert client.returncode == 0, out
        tracer.send_signal(signal.SIGINT)
        tracer.wait(timeout=30)
        tracer = None
        text = report.read_text()
    finally:
        if tracer is not None:
            tracer.kill()
        if client.poll() is None:
            client.kill()
        os.unlink(src)

    m = re.search(r'^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(\d+)?\s*writev$',
                  text, re.M)
    assert m, 'no writev line in the strace summary:\n%s' % text
    calls = int(m.group(1))
    failed = int(m.group(2) or 0)
    print('%s: %d writev calls in smbd\'s main thread, %d failed, for '
          '%d MiB put' % (SHARE, calls, failed, PUT_MB))
    assert calls > 0, text
    assert failed < MAX_FAILED, \
        '%s: smbd\'s main thread failed %d writev() calls putting %d MiB:' \
        ' it spins on the brick socket\n%s' % (SHARE, failed, PUT_MB, text)

    path = os.path.join(stack['FUSE_MOUNT'], name)
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            h.update(chunk)
    os.unlink(path)
    assert h.hexdigest() == want, 'the file put differs on the volume'


class BindingLogSmbd(PrivateSmbd):
    """A private smbd whose processes log the dynamic linker's symbol
    bindings to ld.PID in its directory."""

    def smbd_env(self):
        env = dict(os.environ)
        env['LD_DEBUG'] = 'bindings'
        env['LD_DEBUG_OUTPUT'] = os.path.join(self.dir, 'ld')
        return env


def test_transport_bound_to_libglusterfs(stack):
    srv = BindingLogSmbd('transport', stack,
                         port=private_port(stack, 'transport',
                                           'GF2_TRANSPORT_PORT'))
    for old in glob.glob(os.path.join(srv.dir, 'ld.*')):
        os.unlink(old)
    module = os.environ.get('GF2_TRANSPORT_MODULE', 'glusterfs2')
    srv.write_conf([('kernel share modes', 'no')], [('gf2', [
        ('path', '/'),
        ('vfs objects', module),
        ('glusterfs2:volume', stack['GLUSTER_VOLUME']),
        ('glusterfs2:volfile_server', stack.get('GLUSTER_HOST',
                                                'localhost')),
        ('read only', 'no'),
    ])])
    srv.start()
    try:
        p = srv.smbclient('gf2', 'ls')
        assert 'blocks of size' in p.stdout, p.stdout
    finally:
        srv.stop()
    bound = []
    for path in glob.glob(os.path.join(srv.dir, 'ld.*')):
        with open(path, errors='replace') as f:
            for line in f:
                if 'rpc-transport/socket.so' in line and \
                        "`sys_writev'" in line:
                    bound.append(line.strip())
    assert bound, 'no binding of sys_writev by socket.so logged (was the ' \
        'share served by %s?)' % module
    wrong = [l for l in bound if 'libglusterfs' not in l.split(' to ')[1]]
    assert not wrong, 'socket.so bound sys_writev elsewhere than ' \
        'libglusterfs:\n%s' % '\n'.join(wrong)
    for path in glob.glob(os.path.join(srv.dir, 'ld.*')):
        os.unlink(path)
