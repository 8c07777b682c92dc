"""Samba's own profiling counts glusterfs2's asynchronous I/O.

A private smbd with `smbd profiling level = on` serves a glusterfs2 share
on the stack's volume; after a put and a get of a known size,
`smbstatus --profile` shows at least those bytes under
syscall_asys_pwrite_bytes and syscall_asys_pread_bytes (the counters
SMBPROFILE_BYTES_ASYNC_* feed), and as many calls as it took.
"""

import os
import re
import subprocess
import time
import uuid

from gf2_private_smbd import PrivateSmbd, private_port


def profile(conf):
    p = subprocess.run(['smbstatus', '-s', conf, '--profile'],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    assert p.returncode == 0, p.stdout
    out = {}
    for line in p.stdout.splitlines():
        m = re.match(r'^(syscall_asys_\w+):\s+(\d+)$', line.strip())
        if m:
            out[m.group(1)] = int(m.group(2))
    assert 'syscall_asys_pread_bytes' in out, p.stdout[:2000]
    return out


def test_smbstatus_profile_counts_async_io(stack, tmp_path):
    srv = PrivateSmbd('profile', stack,
                      port=private_port(stack, 'profile', 'GF2_PROFILE_PORT'))
    share = [('vfs objects', 'glusterfs2'), ('path', '/'),
             ('glusterfs2:volume', stack['GLUSTER_VOLUME']),
             ('glusterfs2:volfile_server', stack.get('GLUSTER_HOST',
                                                     'localhost')),
             ('glusterfs2:logfile', os.path.join(srv.dir,
                                                 'glusterfs2-%M.log')),
             ('kernel share modes', 'no'), ('read only', 'no')]
    conf = srv.write_conf([('smbd profiling level', 'on')],
                          [('gf2prof', share)])
    size = (24 << 20) + 777
    src = tmp_path / 'src'
    src.write_bytes(os.urandom(size))
    back = tmp_path / 'back'
    name = 'pytest-profile-%s' % uuid.uuid4().hex[:10]
    srv.start()
    try:
        before = profile(conf)
        p = srv.smbclient('gf2prof', 'put %s %s; get %s %s; del %s' %
                          (src, name, name, back, name))
        assert p.returncode == 0, p.stdout + '\n' + srv.logs()
        assert back.read_bytes() == src.read_bytes()
        # the serving process writes its profile when it ends
        deadline = time.time() + 30
        while True:
            after = profile(conf)
            if after['syscall_asys_pread_bytes'] - \
               before['syscall_asys_pread_bytes'] >= size or \
               time.time() > deadline:
                break
            time.sleep(0.5)
    finally:
        srv.stop()
    d = {k: after[k] - before.get(k, 0) for k in after}
    assert d['syscall_asys_pwrite_bytes'] == size, d
    assert d['syscall_asys_pread_bytes'] >= size, d
    assert d['syscall_asys_pwrite_count'] >= size // (8 << 20), d
    assert d['syscall_asys_pread_count'] >= size // (8 << 20), d
    assert not srv.our_processes(), 'the private smbd did not stop'
