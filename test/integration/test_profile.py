"""Samba's own profiling counts glusterfs2's asynchronous I/O.

A private smbd with `smbd profiling level = on` serves two glusterfs2
shares of the stack's volume; after a put and a get of a known size
through one of them, `smbstatus --profile` shows at least those bytes
under syscall_asys_pwrite_bytes and syscall_asys_pread_bytes (the
counters SMBPROFILE_BYTES_ASYNC_* feed), and as many calls as it took.
From Samba 4.23 on, with `smbd profiling share = yes`, `smbstatus
--profile --json` also has a record per share ("Extended Profile") while
the share is connected: the share used has the bytes written and its
opens, the other share its listing and no data.  Samba 4.24.8 keeps no
reads in a share's record, its own smb2_read counter neither (a [local]
share the same): the read bytes are asserted there when smbd counts the
share's reads, and reported as an expected failure while it does not.
"""

import json
import os
import re
import subprocess
import time
import uuid

import pytest

from gf2_private_smbd import PrivateSmbd, private_port, samba_version


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


def share_profiles(conf):
    """{share: {counter: value}} of the System Calls and SMB2 Calls
    sections of each share's records ("Extended Profile", summed over its
    processes)."""
    p = subprocess.run(['smbstatus', '-s', conf, '--profile', '--json'],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    assert p.returncode == 0, p.stderr
    ext = json.loads(p.stdout).get("Extended Profile", {})
    out = {}
    for key, sections in ext.items():
        name = key.split(':', 1)[0]
        d = out.setdefault(name, {})
        for section in ('System Calls', 'SMB2 Calls'):
            for op, fields in sections.get(section, {}).items():
                for field, v in fields.items():
                    if isinstance(v, int):
                        k = '%s_%s' % (op, field)
                        d[k] = d.get(k, 0) + v
    return out


def per_share_run(srv, conf, src, back, name, size):
    """A put and get through gf2prof and a listing of gf2prof-other, each
    client staying connected meanwhile (smbclient reading its commands
    from a pipe left open): smbd keeps a share's record only while the
    share is connected, and drops it at the first dump after the last
    tree disconnect.  -> share_profiles() once gf2prof's record has the
    bytes read and gf2prof-other's a listing, or after 30 s."""
    user = '%s%%%s' % (srv.env['SMB_USER'], srv.env['SMB_PASS'])
    clients = []
    for share, cmds in (('gf2prof', 'put %s %s\nget %s %s\ndel %s\n' %
                         (src, name, name, back, name)),
                        ('gf2prof-other', 'ls\n')):
        c = subprocess.Popen(
            ['smbclient', '-p', str(srv.port), '//127.0.0.1/%s' % share,
             '-U', user], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, universal_newlines=True)
        c.stdin.write(cmds)     # and stdin stays open: still connected
        c.stdin.flush()
        clients.append(c)
    try:
        deadline = time.time() + 30
        while True:
            shares = share_profiles(conf)
            if (shares.get('gf2prof', {}).get(
                    'syscall_asys_pread_bytes', 0) >= size and
                    shares.get('gf2prof-other', {}).get(
                        'syscall_readdir_count', 0) > 0) or \
               time.time() > deadline:
                return shares
            time.sleep(0.3)
    finally:
        for c in clients:
            c.stdin.close()
            try:
                c.wait(timeout=30)
            except subprocess.TimeoutExpired:
                c.kill()
                c.wait()


def test_smbstatus_profile_counts_async_io(stack, tmp_path):
    per_share = samba_version() >= (4, 23)
    srv = PrivateSmbd('profile', stack,
                      port=private_port(stack, 'profile', 'GF2_PROFILE_PORT'))
    share = srv.gf2_share()
    if per_share:
        share.append(('smbd profiling share', 'yes'))
    conf = srv.write_conf([('smbd profiling level', 'on')],
                          [('gf2prof', share), ('gf2prof-other', share)])
    size = (24 << 20) + 777
    src = tmp_path / 'src'
    src.write_bytes(os.urandom(size))
    back = tmp_path / 'back'
    name = 'pytest-profile-%s' % uuid.uuid4().hex[:10]
    srv.start()
    try:
        before = profile(conf)
        p = srv.smbclient('gf2prof', 'put %s %s; get %s %s' %
                          (src, name, name, back))
        assert p.returncode == 0, p.stdout + '\n' + srv.logs()
        srv.check_read_back(back, src.read_bytes(), p.stdout,
                            os.path.join(stack['FUSE_MOUNT'], name))
        p = srv.smbclient('gf2prof', 'del %s' % name)
        assert p.returncode == 0, p.stdout + '\n' + srv.logs()
        # the other share only sees a listing
        p = srv.smbclient('gf2prof-other', 'ls')
        assert p.returncode == 0, p.stdout + '\n' + srv.logs()
        # the serving process writes its profile when it ends
        deadline = time.time() + 30
        while True:
            after = profile(conf)
            if after['syscall_asys_pread_bytes'] - \
               before['syscall_asys_pread_bytes'] >= size or \
               time.time() > deadline:
                break
            time.sleep(0.5)
        shares, d_run = {}, {}
        if per_share:
            back.unlink()
            shares = per_share_run(srv, conf, src, back, name, size)
            srv.check_read_back(back, src.read_bytes(),
                                '(this client\'s output is not kept)')
            last = profile(conf)
            d_run = {k: last[k] - after.get(k, 0) for k in last}
    finally:
        srv.stop()
    d = {k: after[k] - before.get(k, 0) for k in after}
    assert d['syscall_asys_pwrite_bytes'] == size, d
    assert d['syscall_asys_pread_bytes'] >= size, d
    assert d['syscall_asys_pwrite_count'] >= size // (8 << 20), d
    assert d['syscall_asys_pread_count'] >= size // (8 << 20), d
    if per_share:
        mine = shares.get('gf2prof', {})
        other = shares.get('gf2prof-other', {})
        assert mine.get('syscall_asys_pwrite_bytes') == size, shares
        assert mine.get('syscall_openat_count', 0) >= 2, shares
        assert other.get('syscall_asys_pread_bytes', 0) == 0, shares
        assert other.get('syscall_asys_pwrite_bytes', 0) == 0, shares
        assert other.get('syscall_readdir_count', 0) > 0, shares
        assert mine.get('smb2_write_count', 0) > 0, shares
        if mine.get('syscall_asys_pread_bytes', 0) < size:
            # Samba 4.24.8 keeps no reads in a share's record at all, its
            # own smb2_read counter neither (a [local] share the same);
            # the module's reads reach smbd's totals (asserted above)
            assert mine.get('smb2_read_count', 0) == 0, (
                'smbd counted the share\'s reads, the module did not',
                shares)
            pytest.xfail('Samba %d.%d records no reads in a share\'s '
                         'record (smb2_read 0 as well): %d of %d read bytes '
                         'there, %d in smbd\'s totals' % (
                             samba_version() + (
                                 mine.get('syscall_asys_pread_bytes', 0),
                                 size,
                                 d_run.get('syscall_asys_pread_bytes', 0))))
    else:
        print('Samba %d.%d: no per-share profile (4.23 on)' %
              samba_version())
    assert not srv.our_processes(), 'the private smbd did not stop'
