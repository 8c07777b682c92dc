"""A module compiled for another Samba release series is refused, and
nothing else is.

The module records the Samba release whose headers it was compiled with
and, when smbd loads it, compares that release's series (MAJOR.MINOR)
with the running smbd's (samba_version_string()) before it registers
(source/vfs_glusterfs2.c, source/gf2_sambaver.c).  Here a module is built
from this checkout that claims the series before the installed smbd's
(`./waf configure --samba-version-override=MAJOR.(MINOR-1).0` into
build-guard/, `--module-name=glusterfs2_otherseries`; reused while newer
than its sources), and installed into MODULESDIR/vfs of a mount namespace
of the test's own (gf2_package.PackageRoot: overlays on /usr and
/var), so no other smbd of the machine ever sees it.

A private smbd in that namespace serves two shares on the stack's volume:
[otherseries] through that module and [served] through the stack's.  On one
SMB connection (so in one smbd process):
  - the tree connect to [otherseries] fails with exactly
    NT_STATUS_BAD_NETWORK_NAME (smbd's answer to a share whose VFS
    modules do not initialise);
  - [served] is tree-connected after it, and a file written there reads
    back with the same checksum, the same smbd process answering;
  - the smbd log holds the module's one line naming both versions, the
    VFS interface and the rebuild command, and no smbd panicked.
"""

import glob
import os
import re
import shutil
import subprocess
import time
import uuid

import pytest

from conftest import TOP, sha256
from gf2_private_smbd import PrivateSmbd, private_port
from gf2_package import PackageRoot, modulesdir, newest_mtime, run

import gf2_smb2
from impacket import smb3

MODULE = 'glusterfs2_otherseries'
BUILD = os.path.join(TOP, 'build-guard')
WAF_ENV = dict(os.environ, WAFLOCK='.lock-waf-guard')
INPUTS = ('source', 'include', 'wscript')


def smbd_version():
    out = run(['smbd', '-V']).stdout
    m = re.search(r'Version\s+(\d+)\.(\d+)\.(\d+)', out)
    assert m, 'cannot read smbd -V: %s' % out
    return tuple(int(x) for x in m.groups())


def samba_tree():
    """The Samba tree of this checkout's build (./waf configure)."""
    with open(os.path.join(TOP, 'build', '.samba-source')) as f:
        return f.read().strip()


def build_other_series(claim):
    """build-guard/MODULE.so, claiming Samba `claim`; built when older
    than its sources or configured for another claim."""
    so = os.path.join(BUILD, MODULE + '.so')
    stamp = os.path.join(BUILD, '.claim')
    current = None
    if os.path.exists(stamp):
        with open(stamp) as f:
            current = f.read().strip()
    if os.path.exists(so) and current == claim and \
            os.path.getmtime(so) > newest_mtime(TOP, INPUTS):
        return so, 'reused'
    t0 = time.time()
    waf = os.path.join(TOP, 'waf')
    p = subprocess.run(
        [waf, 'configure', '--out=' + BUILD, '--module-name=' + MODULE,
         '--samba-source=' + samba_tree(),
         '--samba-version-override=' + claim],
        cwd=TOP, env=WAF_ENV, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, universal_newlines=True, timeout=600)
    assert p.returncode == 0, 'configure failed:\n' + p.stdout[-4000:]
    p = subprocess.run([waf, 'build', '--targets=' + MODULE], cwd=TOP,
                       env=WAF_ENV, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True,
                       timeout=900)
    assert p.returncode == 0, 'build failed:\n' + p.stdout[-4000:]
    assert os.path.exists(so), p.stdout[-2000:]
    with open(stamp, 'w') as f:
        f.write(claim + '\n')
    return so, 'built in %.0f s' % (time.time() - t0)


def test_other_series_refused_others_served(stack, tmp_path):
    if os.geteuid() != 0:
        pytest.skip('a mount namespace and overlays need root')
    if not os.path.exists(os.path.join(TOP, 'build', '.samba-source')):
        pytest.skip('no configured build/ (test/stack up builds it)')
    major, minor, rel = smbd_version()
    assert minor > 0
    claim = '%d.%d.0' % (major, minor - 1)
    so, how = build_other_series(claim)
    print('module claiming Samba %s: %s (%s)' % (claim, so, how))

    srv = PrivateSmbd('guard', stack,
                      port=private_port(stack, 'pkg', 'GF2_GUARD_PORT'))
    srv.write_conf([], [('otherseries', srv.gf2_share(vfs=MODULE)),
                        ('served', srv.gf2_share())],
                   header='test_samba_release_guard.py: a module claiming '
                   'Samba %s beside the stack\'s' % claim)
    for f in glob.glob(os.path.join(srv.dir, 'log.*')):
        os.unlink(f)

    root = PackageRoot(str(tmp_path / 'root'))
    target = os.path.join(modulesdir(), 'vfs', MODULE + '.so')
    d = 'pytest-guard-%s' % uuid.uuid4().hex[:10]
    refused = None
    try:
        shutil.copy2(so, root.path(target))
        assert not os.path.exists(target), \
            '%s is visible outside the namespace' % target
        srv.wrap = root.cmd()
        srv.start()
        # one connection, one smbd process: [served] tree-connected first
        cl = gf2_smb2.Client(srv.client_env(), 'served')
        try:
            try:
                cl.conn.quiet()
                cl.conn.c.connectTree('otherseries')
                refused = 'tree connect succeeded'
            except smb3.SessionError as e:
                refused = e.get_error_code()
            # the same process keeps serving [served]
            data = os.urandom((1 << 20) + 777)
            status, fid = cl.create(d + '.bin')
            assert status == 0, gf2_smb2.status_name(status)
            status, n = cl.write(fid, 0, data)
            assert (status, n) == (0, len(data)), \
                gf2_smb2.status_name(status)
            status, back = cl.read(fid, 0, len(data))
            assert status == 0, gf2_smb2.status_name(status)
            assert sha256(back) == sha256(data), 'read back differs'
            assert cl.close(fid) == 0
            cl.alive()
        finally:
            cl.drop()
        log = srv.logs(tail=10 ** 6)
    finally:
        srv.stop()
        root.close()
        for p in glob.glob(os.path.join(stack['FUSE_MOUNT'], d + '*')):
            os.unlink(p)

    assert refused == gf2_smb2.STATUS['STATUS_BAD_NETWORK_NAME'], \
        'tree connect to [otherseries]: %s, expected ' \
        'STATUS_BAD_NETWORK_NAME' % (
            gf2_smb2.status_name(refused) if isinstance(refused, int)
            else refused)
    version = '%d.%d.%d' % (major, minor, rel)
    line = re.findall(r'.*%s was compiled for Samba %s \(VFS interface '
                      r'\d+\) but this smbd is Samba %s\S*: .*' % (
                          MODULE, re.escape(claim), re.escape(version)),
                      log)
    assert line, 'no log line naming both versions:\n' + log[-4000:]
    assert 'scripts/build-deb' in line[0] and './waf install' in line[0], \
        line[0]
    assert 'PANIC' not in log and 'INTERNAL ERROR' not in log, log[-4000:]
    assert not srv.our_processes(), 'the private smbd did not stop'
    assert not os.path.exists(target)
