"""The Debian package samba-vfs-glusterfs2: build, install,
serve and remove, in a mount namespace of its own, so that the module the
machine's smbds load is never touched.

  1. build-deb/samba-vfs-glusterfs2_*.deb is reused when it is newer than
     every file that goes into the package (source/, include/, wscript,
     waf, scripts/, debian/, docs/, smb.conf.examples/, README); otherwise
     scripts/build-deb builds it (about 10-15 s with a warm Samba cache).
     Its control fields and contents are checked: Depends on exactly the
     installed samba version and on libgfapi0, the module in
     MODULESDIR/vfs, the manual page, every example configuration.
  2. A private mount namespace (PackageRoot: a `sleep` started by
     `unshare --mount`, entered with nsenter) gets overlays on /usr and
     /var, their changes kept in the test's temporary directory: there
     `dpkg -i` installs the package, and MODULESDIR/vfs/glusterfs2.so is
     checked to be the packaged file (dpkg -S, byte-identical to the
     .deb's).  dpkg's database, the installed files and the manual page
     index change only inside the namespace.
  3. A private smbd started in that namespace (127.0.0.1, the stack's
     port plus its own offset, directories in .stack/pkg/, the stack's
     users; started before the install) serves standalone.conf's share on
     the stack's volume: a file is written and read back with checksums
     through python3-smbc, and the smbd process serving the connection is
     checked to have exactly the installed file mapped (same inode).
  4. `dpkg -r` removes the package in the namespace (the module file is
     gone, dpkg no longer lists the package); the private smbd is stopped
     and the namespace goes with its last process.  MODULESDIR/vfs/
     glusterfs2.so as the rest of the machine sees it is compared with a
     copy taken before the install (same bytes, mode and mtime).

So the module that the stacks' smbds load (the shared glusterfs2.so of
whichever checkout installed it) is never replaced, not even for a
moment, and two checkouts can run this test at once.  Needs root (mount
namespaces, overlays, dpkg); skipped when the package is installed on
this machine (dpkg -i would then upgrade it, and the machine's view of the
module is the packaged one).  GF2_PKG_PORT overrides the private smbd's
port; GF2_SKIP_PACKAGE_TEST=1 skips the test.

Inside a test platform (GF2_PLATFORM=NAME: `test/stack exec --platform
NAME`, `test/platform/root run NAME`, test/run-all --platform NAME) the
package is build-deb/NAME/samba-vfs-glusterfs2_*.deb, depending on the
platform's samba; it is not built there (the root has no git to list the
sources): scripts/build-deb --platform NAME builds it from the host, and
without a current one the test is skipped with that reason.
"""

import filecmp
import glob
import os
import re
import shutil
import subprocess
import time
import uuid

import pytest

from conftest import TOP, Smb, sha256
from gf2_private_smbd import PrivateSmbd, private_port, parse_smb_conf

PKG = 'samba-vfs-glusterfs2'
PLATFORM = os.environ.get('GF2_PLATFORM', '')
OUT = os.path.join(TOP, 'build-deb', PLATFORM) if PLATFORM else \
    os.path.join(TOP, 'build-deb')
PKG_INPUTS = ('source', 'include', 'wscript', 'waf', 'scripts', 'debian',
              'docs', 'smb.conf.examples', 'README')


def run(cmd, timeout=300, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True,
                          errors='replace', timeout=timeout, **kw)


def newest_input_mtime():
    newest = 0.0
    for name in PKG_INPUTS:
        path = os.path.join(TOP, name)
        if os.path.isfile(path):
            newest = max(newest, os.path.getmtime(path))
            continue
        for root, dirs, files in os.walk(path):
            # debian/'s build products are not inputs
            dirs[:] = [d for d in dirs if d not in (
                'wafbuild', '.debhelper', PKG, '__pycache__')]
            for f in files:
                if root == os.path.join(TOP, 'debian') and (
                        f in ('files', 'samba-tree', 'samba.vars',
                              'debhelper-build-stamp') or
                        f.endswith(('.substvars', '.log'))):
                    continue
                newest = max(newest, os.path.getmtime(os.path.join(root, f)))
    return newest


def modulesdir():
    out = run(['smbd', '-b']).stdout
    m = re.search(r'MODULESDIR:\s*(\S+)', out)
    assert m, 'smbd -b prints no MODULESDIR'
    return m.group(1)


def dpkg_status(pkg):
    p = run(['dpkg-query', '-W', '-f=${db:Status-Abbrev}', pkg])
    return p.stdout.strip() if p.returncode == 0 else ''


def get_deb():
    """(path of a current .deb, how it was obtained)."""
    debs = sorted(glob.glob(os.path.join(OUT, PKG + '_*.deb')),
                  key=os.path.getmtime)
    if debs and os.path.getmtime(debs[-1]) > newest_input_mtime():
        return debs[-1], 'reused (newer than its sources)'
    if PLATFORM:
        pytest.skip('inside platform %s: no build-deb/%s/%s_*.deb newer '
                    'than its sources, and the package is not built inside '
                    'a platform: run scripts/build-deb --platform %s on the '
                    'host first' % (PLATFORM, PLATFORM, PKG, PLATFORM))
    t0 = time.time()
    p = run([os.path.join(TOP, 'scripts', 'build-deb')], timeout=900)
    took = time.time() - t0
    assert p.returncode == 0, 'scripts/build-deb failed:\n' + p.stdout[-6000:]
    deb = p.stdout.strip().splitlines()[-1]
    assert os.path.isfile(deb), p.stdout[-3000:]
    return deb, 'built by scripts/build-deb in %.0f s' % took


class PackageRoot:
    """A mount namespace of its own whose /usr and /var are overlays of
    the machine's (their upper layers in DIR): what dpkg does there, the
    machine never sees.  Its first process is a `sleep` started by
    `unshare --mount`; commands enter it with nsenter (cmd), files are
    reached from outside through /proc/PID/root (path), and it goes when
    its last process ends (close)."""

    OVERLAID = ('/usr', '/var')

    def __init__(self, d):
        self.dir = d
        self.holder = subprocess.Popen(
            ['unshare', '--mount', '--propagation', 'private', '--',
             'sleep', 'infinity'])
        try:
            self._setup()
        except BaseException:
            self.close()
            raise

    def _setup(self):
        ours = os.readlink('/proc/self/ns/mnt')
        deadline = time.time() + 10
        while True:
            try:
                if os.readlink('/proc/%d/ns/mnt' % self.holder.pid) != \
                        ours:
                    break
            except OSError:
                pass
            assert self.holder.poll() is None and time.time() < deadline, \
                'unshare --mount did not start a mount namespace'
            time.sleep(0.05)
        for i, lower in enumerate(self.OVERLAID):
            upper = os.path.join(self.dir, 'upper%d' % i)
            work = os.path.join(self.dir, 'work%d' % i)
            os.makedirs(upper)
            os.makedirs(work)
            p = run(self.cmd('mount', '-t', 'overlay', 'overlay', '-o',
                             'lowerdir=%s,upperdir=%s,workdir=%s' % (
                                 lower, upper, work), lower))
            assert p.returncode == 0, 'overlay on %s: %s' % (lower, p.stdout)

    def cmd(self, *args):
        # -r -w: the holder's root and working directory, which inside a
        # platform's chroot are not the namespace's own "/"
        return ['nsenter', '-t', str(self.holder.pid), '-m', '-r', '-w',
                '--'] + list(args)

    def run(self, *args, timeout=300):
        return run(self.cmd(*args), timeout=timeout)

    def path(self, p):
        return '/proc/%d/root%s' % (self.holder.pid, p)

    def close(self):
        if self.holder.poll() is None:
            self.holder.kill()
        self.holder.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def dpkg_status_in(root, pkg):
    p = root.run('dpkg-query', '-W', '-f=${db:Status-Abbrev}', pkg)
    return p.stdout.strip() if p.returncode == 0 else ''


@pytest.mark.skipif(os.environ.get('GF2_SKIP_PACKAGE_TEST') == '1',
                    reason='GF2_SKIP_PACKAGE_TEST=1')
def test_package_build_install_serve_remove(stack, tmp_path):
    if os.geteuid() != 0:
        pytest.skip('dpkg -i needs root')
    if dpkg_status(PKG).startswith(('ii', 'iU', 'iF', 'hi')):
        pytest.skip('%s is installed on this machine; this test would '
                    'remove it' % PKG)

    # 1. the package
    deb, how = get_deb()
    print('package: %s (%s)' % (deb, how))
    fields = {}
    for f in ('Package', 'Version', 'Architecture', 'Depends',
              'Built-Using'):
        fields[f] = run(['dpkg-deb', '-f', deb, f]).stdout.strip()
    samba_version = run(['dpkg-query', '-W', '-f=${Version}',
                         'samba']).stdout.strip()
    assert fields['Package'] == PKG
    depends = [d.strip() for d in fields['Depends'].split(',')]
    assert 'samba (= %s)' % samba_version in depends, \
        'Depends does not pin the installed samba %s: %s' % (
            samba_version, fields['Depends'])
    assert any(d.startswith('libgfapi0') for d in depends), fields['Depends']
    mdir = modulesdir()
    target = os.path.join(mdir, 'vfs', 'glusterfs2.so')
    contents = run(['dpkg-deb', '-c', deb]).stdout
    paths = set('/' + l.split()[-1].lstrip('./') for l in contents.splitlines()
                if l.strip())
    want = {target, '/usr/share/man/man8/vfs_glusterfs2.8.gz',
            '/usr/bin/glusterfs2-stats', '/usr/bin/glusterfs2-check',
            '/usr/share/glusterfs2/glusterfs2-dashboard.json',
            '/var/lib/glusterd/hooks/1/start/post/S29glusterfs2-start.sh',
            '/var/lib/glusterd/hooks/1/stop/pre/S29glusterfs2-stop.sh',
            '/var/lib/glusterd/hooks/1/set/post/S29glusterfs2-set.sh',
            '/usr/libexec/glusterfs2/ctdb_mutex_glusterfs2_helper'}
    for conf in glob.glob(os.path.join(TOP, 'smb.conf.examples', '*.conf')):
        want.add('/usr/share/doc/%s/examples/%s' % (PKG,
                                                      os.path.basename(conf)))
    assert want <= paths, 'missing from the package: %s' % sorted(
        want - paths)
    # the counters' writer for node_exporter (/lib or, from Debian 13,
    # /usr/lib)
    for unit in ('glusterfs2-textfile.service', 'glusterfs2-textfile.timer'):
        assert {'/lib/systemd/system/' + unit,
                '/usr/lib/systemd/system/' + unit} & paths, unit
    unpacked = tmp_path / 'unpacked'
    assert run(['dpkg-deb', '-x', deb, str(unpacked)]).returncode == 0
    packaged_so = str(unpacked) + target

    # the private smbd: standalone.conf's share on the stack's volume
    sections = parse_smb_conf(os.path.join(TOP, 'smb.conf.examples',
                                           'standalone.conf'))
    share, items = [(n, i) for n, i in sections if n != 'global'][0]
    srv = PrivateSmbd('pkg', stack,
                      port=private_port(stack, 'pkg', 'GF2_PKG_PORT'))
    # the packaged module's name, whichever module the stack serves
    srv.module = 'glusterfs2'
    srv.write_conf(dict(sections).get('global', []),
                   [(share, srv.adapt_share(items))],
                   header='test_package.py: standalone.conf served by the '
                   'packaged module')

    # the machine's module, to compare with afterwards
    saved = str(tmp_path / 'glusterfs2.so.saved')
    existed = os.path.exists(target)
    mode_mtime = None
    orig_sha = None
    if existed:
        st = os.stat(target)
        mode_mtime = (st.st_mode & 0o7777, st.st_mtime_ns)
        shutil.copy2(target, saved)
        assert filecmp.cmp(target, saved, shallow=False)
        with open(saved, 'rb') as f:
            orig_sha = sha256(f.read())

    root = PackageRoot(str(tmp_path / 'root'))
    installed = False
    timings = {}
    removed_rc = None
    gone = listed_after = man_after = None
    d = 'pytest-pkg-%s' % uuid.uuid4().hex[:10]
    try:
        srv.wrap = root.cmd()
        srv.start()
        # 2. install
        t0 = time.time()
        p = root.run('dpkg', '-i', deb)
        timings['dpkg -i'] = time.time() - t0
        installed = p.returncode == 0 or dpkg_status_in(root, PKG) != ''
        assert p.returncode == 0, 'dpkg -i failed:\n' + p.stdout
        owner = root.run('dpkg', '-S', target).stdout.strip()
        assert owner == '%s: %s' % (PKG, target), owner
        assert filecmp.cmp(root.path(target), packaged_so, shallow=False), \
            '%s is not the packaged file' % target
        listed = root.run('dpkg', '-L', PKG).stdout.split()
        assert '/usr/share/man/man8/vfs_glusterfs2.8.gz' in listed
        assert os.path.isfile(root.path(
            '/usr/share/doc/%s/examples/standalone.conf' % PKG))

        # 3. serve
        t0 = time.time()
        c = Smb(srv.client_env(), share)
        try:
            c.mkdir(d)
            data = os.urandom((4 << 20) + 4321)
            c.write(d + '/file', data)
            back = c.read(d + '/file')
            assert sha256(back) == sha256(data), 'read back differs'
            # the connection's smbd has the installed file mapped
            st = os.stat(root.path(target))
            mapped = []
            for pid in srv.client_children():
                try:
                    with open('/proc/%d/maps' % pid) as f:
                        for line in f:
                            parts = line.split()
                            # the path as seen from this process's root:
                            # inside a platform's chroot, the overlay of
                            # another mount namespace shows with the
                            # root's host path before it
                            if len(parts) >= 6 and \
                                    parts[5].endswith(target):
                                mapped.append(int(parts[4]))
                except OSError:
                    pass
            assert st.st_ino in mapped, 'no smbd child of the private smbd has the ' \
                'installed %s (inode %d) mapped: %s' % (target, st.st_ino,
                                                       mapped)
            c.unlink(d + '/file')
            c.rmdir(d)
        finally:
            c.close()
            timings['serve'] = time.time() - t0
    finally:
        # 4. remove
        try:
            if installed:
                t0 = time.time()
                p = root.run('dpkg', '-r', PKG)
                timings['dpkg -r'] = time.time() - t0
                removed_rc = (p.returncode, p.stdout)
                gone = not os.path.exists(root.path(target))
                listed_after = dpkg_status_in(root, PKG)
                man_after = os.path.exists(root.path(
                    '/usr/share/man/man8/vfs_glusterfs2.8.gz'))
            srv.stop()
        finally:
            root.close()
            shutil.rmtree(os.path.join(stack['FUSE_MOUNT'], d),
                          ignore_errors=True)
            print('timings: %s' % ', '.join('%s %.1f s' % kv
                                            for kv in timings.items()))

    # the machine's module was never touched
    if existed:
        assert run(['cmp', saved, target]).returncode == 0, \
            'the machine\'s %s differs from the saved one' % target
        with open(target, 'rb') as f:
            assert sha256(f.read()) == orig_sha
        st = os.stat(target)
        assert (st.st_mode & 0o7777, st.st_mtime_ns) == mode_mtime
    else:
        assert not os.path.exists(target)
    assert removed_rc is not None and removed_rc[0] == 0, \
        'dpkg -r failed: %s' % (removed_rc,)
    assert gone, 'dpkg -r left %s behind' % target
    assert not listed_after.startswith('ii'), \
        'dpkg still lists %s: %s' % (PKG, listed_after)
    assert not man_after
    assert not os.path.exists('/usr/share/man/man8/vfs_glusterfs2.8.gz')
    assert not srv.our_processes(), 'the private smbd did not stop'
