"""The Debian package samba-vfs-glusterfs2: build, install,
serve and remove, in a mount namespace of its own, so that the module the
machine's smbds load is never touched.

  1. build-deb/samba-vfs-glusterfs2_*.deb is reused when it is newer than
     every file that goes into the package (source/, include/, wscript,
     waf, scripts/, debian/, docs/, smb.conf.examples/, README); otherwise
     scripts/build-deb builds it (about 10-15 s with a warm Samba cache).
     Its control fields and contents are checked: Depends on the
     installed samba version up to the next release series, and on
     libgfapi0, the module in
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
import time
import uuid

import pytest

from conftest import TOP, Smb, sha256
from gf2_package import PackageRoot, modulesdir, newest_mtime, run
from gf2_private_smbd import PrivateSmbd, private_port, parse_smb_conf

PKG = 'samba-vfs-glusterfs2'
PLATFORM = os.environ.get('GF2_PLATFORM', '')
OUT = os.path.join(TOP, 'build-deb', PLATFORM) if PLATFORM else \
    os.path.join(TOP, 'build-deb')
PKG_INPUTS = ('source', 'include', 'wscript', 'waf', 'scripts', 'debian',
              'docs', 'smb.conf.examples', 'README')


def newest_input_mtime():
    # debian/'s build products are not inputs
    def product(root, f):
        return root == os.path.join(TOP, 'debian') and (
            f in ('files', 'samba-tree', 'samba.vars',
                  'debhelper-build-stamp') or
            f.endswith(('.substvars', '.log')))
    return newest_mtime(TOP, PKG_INPUTS, prune_dirs=(
        'wafbuild', '.debhelper', PKG, '__pycache__'), skip_file=product)


def next_series(version):
    """2:4.17.12+dfsg-0+deb12u4 -> 2:4.18~: the first version of the next
    release series, the epoch kept."""
    m = re.match(r'^(\d+:)?(\d+)\.(\d+)\.\d+', version)
    assert m, version
    return '%s%s.%d~' % (m.group(1) or '', m.group(2), int(m.group(3)) + 1)


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
    # from the installed revision to the next release series
    # (test_samba_updates_with_the_package checks the bounds and apt)
    assert 'samba (>= %s)' % samba_version in depends, \
        'Depends does not start at the installed samba %s: %s' % (
            samba_version, fields['Depends'])
    assert 'samba (<< %s)' % next_series(samba_version) in depends, \
        'Depends does not end below the next release series %s: %s' % (
            next_series(samba_version), fields['Depends'])
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


# -- Samba's updates with the package installed -------------------------
#
# Samba's updates with samba-vfs-glusterfs2 installed: what apt does.
#
# The package depends on `samba (>= the revision it was built against)` and
# `samba (<< the next release series)` (debian/control,
# debian/samba-version).  This checks both bounds, then lets apt simulate
# the upgrades an admin (or unattended-upgrades) would run, with apt and
# dpkg state of the test's own, so nothing of the machine changes:
#
#   1. The .deb's Depends (dpkg-deb -f) against the installed samba's
#      version and against versions around it (dpkg --compare-versions):
#      the installed revision, a later Debian revision of the same
#      upstream release and the next patch release of the series are
#      accepted, an earlier revision and the next release series are not.
#   2. A private dpkg status (the machine's, plus the package as installed)
#      and a local file repository that holds a newer Debian revision of
#      every installed package built from the samba source (their control
#      data from dpkg, the revision's last number one higher, as a security
#      update is numbered): `apt-get -s upgrade` upgrades samba, keeps
#      nothing back and removes nothing.
#   3. The same with the next patch release of the series in the
#      repository (how Debian 13 ships samba's security fixes; the module
#      loads into it, and test/samba-revisions --platform trixie runs the
#      core so): `apt-get -s upgrade` takes it too, nothing kept back or
#      removed (test/platform/test_samba_upgrade.py does the same in the
#      Debian 13 root with the archive's real versions).
#   4. The same with the next release series in the repository (a new
#      series needs a rebuild of the module, which refuses to load):
#      `apt-get -s upgrade` keeps samba back instead of breaking the share,
#      and `apt-get -s dist-upgrade` would remove the module, which is why
#      README's "Upgrading Samba" says to rebuild first.
#
# apt reads no list but the local repository's (Dir::Etc::SourceList,
# SourceParts and PreferencesParts of its own, its lists and cache in the
# test's directory); -s simulates, so neither dpkg nor apt's state of the
# machine is written.  The .deb is the one test_package.py uses
# (build-deb/, rebuilt by scripts/build-deb when older than its sources).

SAMBA = 'samba'


def samba_source_packages():
    """{package: version} of the installed packages built from samba."""
    out = run(['dpkg-query', '-W', '-f=${Package}\t${Version}\t'
               '${source:Package}\t${db:Status-Abbrev}\n']).stdout
    pkgs = {}
    for line in out.splitlines():
        parts = line.split('\t')
        if len(parts) == 4 and parts[2] == SAMBA and \
                parts[3].startswith('ii'):
            pkgs[parts[0]] = parts[1]
    return pkgs


def next_revision(version):
    """2:4.17.12+dfsg-0+deb12u4 -> 2:4.17.12+dfsg-0+deb12u5: the
    revision's last number one higher, as Debian numbers an update."""
    m = re.match(r'^(.*-.*?)(\d+)$', version)
    assert m, 'no Debian revision ending in a number: %s' % version
    return m.group(1) + str(int(m.group(2)) + 1)


def upstream(version):
    """2:4.17.12+dfsg-0+deb12u4 -> 4.17.12"""
    m = re.match(r'^(?:\d+:)?(\d+\.\d+\.\d+)', version)
    assert m, version
    return m.group(1)


def version_ok(version, depends):
    """Whether samba at version satisfies every samba (OP V) of depends."""
    rels = re.findall(r'\bsamba \(([<>=]+) ([^)]+)\)', depends)
    assert rels, 'no versioned dependency on samba: %s' % depends
    op = {'>=': 'ge', '<<': 'lt', '=': 'eq', '<=': 'le', '>>': 'gt'}
    return all(run(['dpkg', '--compare-versions', version, op[o],
                    v]).returncode == 0 for o, v in rels)


def stanzas(pkgs, rewrite):
    """Control stanzas of the installed pkgs as a repository's Packages
    file would list them, every version string passed through rewrite."""
    out = []
    for name in sorted(pkgs):
        text = run(['dpkg-query', '-s', name]).stdout
        keep = []
        skip = False
        for line in text.splitlines():
            if line.startswith((' ', '\t')):
                if not skip:
                    keep.append(line)
                continue
            field = line.split(':', 1)[0]
            skip = field in ('Status', 'Conffiles', 'Config-Version')
            if not skip:
                keep.append(line)
        stanza = rewrite('\n'.join(keep))
        stanza += '\nFilename: pool/%s.deb\nSize: 1\n' % name
        out.append(stanza)
    return '\n'.join(out)


class PrivateApt:
    """apt with its own sources, lists, cache and dpkg status file."""

    def __init__(self, d, status):
        self.d = d
        for sub in ('lists/partial', 'cache/archives/partial', 'parts',
                    'prefs', 'repo'):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        with open(os.path.join(d, 'sources.list'), 'w') as f:
            f.write('deb [trusted=yes] file:%s ./\n' %
                    os.path.join(d, 'repo'))
        self.opts = [
            '-o', 'Dir::State::status=%s' % status,
            '-o', 'Dir::State::Lists=%s' % os.path.join(d, 'lists'),
            '-o', 'Dir::Cache=%s' % os.path.join(d, 'cache'),
            '-o', 'Dir::Etc::SourceList=%s' % os.path.join(
                d, 'sources.list'),
            '-o', 'Dir::Etc::SourceParts=%s' % os.path.join(d, 'parts'),
            '-o', 'Dir::Etc::PreferencesParts=%s' % os.path.join(
                d, 'prefs'),
            '-o', 'Dir::Etc::Preferences=%s' % os.path.join(d, 'prefs',
                                                            'none'),
            '-o', 'APT::Sandbox::User=root',
            '-o', 'Debug::NoLocking=1',
            '-o', 'APT::Get::Show-Versions=1',
        ]

    def publish(self, packages):
        with open(os.path.join(self.d, 'repo', 'Packages'), 'w') as f:
            f.write(packages)
        p = run(['apt-get'] + self.opts + ['-q', 'update'], timeout=120)
        assert p.returncode == 0, 'apt-get update (local) failed:\n' + \
            p.stdout

    def simulate(self, what):
        p = run(['apt-get'] + self.opts + ['-s', '-q', what], timeout=120)
        assert p.returncode == 0, 'apt-get -s %s failed:\n%s' % (what,
                                                                 p.stdout)
        return p.stdout


def kept_back(out):
    """Packages apt lists as kept back (one a line with Show-Versions)."""
    m = re.search(r'kept back:\n((?:  .*\n)+)', out)
    return [line.split()[0] for line in m.group(1).splitlines()] if m \
        else []


@pytest.mark.skipif(os.environ.get('GF2_SKIP_PACKAGE_TEST') == '1',
                    reason='GF2_SKIP_PACKAGE_TEST=1')
def test_samba_updates_with_the_package(stack, tmp_path):
    if os.geteuid() != 0:
        pytest.skip('apt-get update as root (its sandbox user)')
    deb, how = get_deb()
    print('package: %s (%s)' % (deb, how))
    depends = run(['dpkg-deb', '-f', deb, 'Depends']).stdout.strip()
    pkgs = samba_source_packages()
    assert SAMBA in pkgs, 'samba is not installed'
    installed = pkgs[SAMBA]
    newer = next_revision(installed)
    up = upstream(installed)
    major, minor, rel = up.split('.')
    next_up = '%s.%s.%d' % (major, minor, int(rel) + 1)
    earlier = re.sub(r'(\d+)$', lambda m: str(int(m.group(1)) - 1),
                     installed) if re.search(r'[1-9]\d*$', installed) \
        else None

    # 1. the bounds
    print('Depends: %s' % depends)
    assert version_ok(installed, depends), \
        'the installed samba %s does not satisfy %s' % (installed, depends)
    assert version_ok(newer, depends), \
        'a later revision %s of the same release does not satisfy %s' % (
            newer, depends)
    nxt = installed.replace(up, next_up, 1)
    assert version_ok(nxt, depends), \
        'the next patch release %s does not satisfy %s' % (nxt, depends)
    next_minor = '%s.%d.0' % (major, int(minor) + 1)
    series = installed.replace(up, next_minor, 1)
    assert not version_ok(series, depends), \
        'the next release series %s satisfies %s' % (series, depends)
    if earlier:
        assert not version_ok(earlier, depends), \
            'an earlier revision %s satisfies %s' % (earlier, depends)

    # the package as installed, in a dpkg status file of the test's own
    control = run(['dpkg-deb', '-f', deb]).stdout.rstrip('\n')
    status = str(tmp_path / 'status')
    with open('/var/lib/dpkg/status') as f:
        machine = f.read()
    if '\nPackage: %s\n' % PKG in '\n' + machine:
        pytest.skip('%s is installed on this machine' % PKG)
    with open(status, 'w') as f:
        f.write(machine.rstrip('\n') + '\n\n')
        f.write(control.replace('\nVersion:', '\nStatus: install ok '
                                'installed\nVersion:', 1) + '\n')

    # 2. a security update: the same release, the next Debian revision
    apt = PrivateApt(str(tmp_path / 'apt-revision'), status)
    old_rev = installed.split(':', 1)[-1].rsplit('-', 1)[1]
    new_rev = newer.split(':', 1)[-1].rsplit('-', 1)[1]
    apt.publish(stanzas(pkgs, lambda s: s.replace('-' + old_rev,
                                                  '-' + new_rev)))
    out = apt.simulate('upgrade')
    print('apt-get -s upgrade, samba %s offered:\n%s' % (newer, out))
    assert re.search(r'^Inst samba \[%s\] \(%s ' % (
        re.escape(installed), re.escape(newer)), out, re.M), \
        'samba %s is not upgraded to %s:\n%s' % (installed, newer, out)
    assert not kept_back(out), 'kept back: %s' % kept_back(out)
    assert not re.search(r'^Remv ', out, re.M), 'apt removes:\n' + out
    assert '\nInst %s' % PKG not in out
    for name in pkgs:
        assert re.search(r'^Inst %s ' % re.escape(name), out, re.M), \
            '%s is not upgraded with samba:\n%s' % (name, out)

    # 3. the next patch release of the series: taken, the share kept
    apt = PrivateApt(str(tmp_path / 'apt-patch'), status)
    apt.publish(stanzas(pkgs, lambda s: s.replace(up, next_up)))
    out = apt.simulate('upgrade')
    print('apt-get -s upgrade, samba %s offered:\n%s' % (nxt, out))
    assert re.search(r'^Inst samba \[%s\] \(%s ' % (
        re.escape(installed), re.escape(nxt)), out, re.M), \
        'samba %s is not upgraded to %s:\n%s' % (installed, nxt, out)
    assert not kept_back(out), 'kept back: %s' % kept_back(out)
    assert not re.search(r'^Remv ', out, re.M), 'apt removes:\n' + out

    # 4. the next release series: samba kept back, the share kept
    apt = PrivateApt(str(tmp_path / 'apt-series'), status)
    apt.publish(stanzas(pkgs, lambda s: s.replace(up, next_minor)))
    out = apt.simulate('upgrade')
    print('apt-get -s upgrade, samba %s offered:\n%s' % (series, out))
    assert SAMBA in kept_back(out), \
        'samba %s is not kept back:\n%s' % (series, out)
    assert not re.search(r'^(Inst|Remv) (samba|%s) ' % PKG, out, re.M), out
    out = apt.simulate('dist-upgrade')
    print('apt-get -s dist-upgrade, samba %s offered:\n%s' % (series, out))
    assert re.search(r'^Remv %s ' % re.escape(PKG), out, re.M), \
        'dist-upgrade to %s keeps the module built for %s:\n%s' % (
            series, installed, out)
