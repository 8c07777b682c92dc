"""Samba's security update on a Debian 13 platform, simulated, with
samba-vfs-glusterfs2 installed: what `apt-get upgrade` (and so
unattended-upgrades) does.

Debian 13 ships samba's security fixes as new upstream patch releases
(2:4.22.10+dfsg-0+deb13u2, then 2:4.22.11+dfsg-0+deb13u1), not as new
Debian revisions of one release as Debian 12 does.  The package's
dependency (debian/control, debian/samba-version) must let such an update
in with the module in place.

The platform's root (GLUSTERFS2_TEST_PLATFORM, default trixie; built by
test/platform/root build, not necessarily up) holds apt lists that know
the installed samba and an earlier patch release of its series.  The test
writes a dpkg status file of its own in the root: the root's, with every
installed package built from the samba source put back to its stanza of
the earlier patch release (from the root's apt lists), and
samba-vfs-glusterfs2 installed as built against that release, its Depends
from `debian/samba-version --bounds EARLIER` (the rule the package build
uses).  Then, chrooted into the root, `apt-get -s upgrade` and `apt-get -s
dist-upgrade` with that status (-o Dir::State::status; -s simulates, no
lock taken: neither the root's dpkg nor its apt state changes, and the
archive is not asked: the lists are the root's).

- test_security_update_is_taken: samba and every other samba package go
  to the installed (newer) patch release; nothing is kept back, nothing
  removed, the module's package stays.
- test_patch_release_bound_holds_samba_back: the same with the bound the
  package had before (`<< EPOCH:MAJ.MIN.(REL+1)~`): apt keeps samba back
  on upgrade and removes the module on dist-upgrade, which is what the
  first test guards against (and shows that the simulation tells the two
  rules apart).

Skipped when the root is not built, or its apt lists know no earlier
patch release of the installed series (trixie-backports: 4.24.8 alone).
Needs root (chroot).  Run from the top of the checkout:

    python3 -m pytest -v -p no:cacheprovider test/platform/test_samba_upgrade.py
"""

import os
import re
import shutil
import subprocess
import tempfile

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
ROOT_TOOL = os.path.join(TOP, 'test', 'platform', 'root')
SAMBA_VERSION = os.path.join(TOP, 'debian', 'samba-version')
PLATFORM = os.environ.get('GF2_TEST_PLATFORM', 'trixie')
PKG = 'samba-vfs-glusterfs2'
# fields of an archive's Packages stanza that a status file does not have
ARCHIVE_ONLY = ('Filename', 'Size', 'MD5sum', 'SHA1', 'SHA256', 'SHA512',
                'Description-md5', 'Tag', 'Priority')


def run(cmd, timeout=300):
    return subprocess.run(cmd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True,
                          errors='replace', timeout=timeout)


def upstream(version):
    """2:4.22.10+dfsg-0+deb13u2 -> (4, 22, 10)"""
    m = re.match(r'^(?:\d+:)?(\d+)\.(\d+)\.(\d+)', version)
    assert m, version
    return tuple(int(x) for x in m.groups())


def split_stanzas(text):
    return [s for s in re.split(r'\n\s*\n', text.strip('\n')) if s.strip()]


def field(stanza, name):
    m = re.search(r'^%s:[ \t]*(.*)$' % re.escape(name), stanza, re.M)
    return m.group(1).strip() if m else None


def drop_fields(stanza, names):
    out, skip = [], False
    for line in stanza.splitlines():
        if line.startswith((' ', '\t')):
            if not skip:
                out.append(line)
            continue
        skip = line.split(':', 1)[0] in names
        if not skip:
            out.append(line)
    return '\n'.join(out)


def kept_back(out):
    m = re.search(r'kept back:\n((?:  .*\n)+)', out)
    return m.group(1).split() if m else []


class Root:
    def __init__(self):
        p = run([ROOT_TOOL, 'info', PLATFORM], timeout=60)
        assert p.returncode == 0, p.stdout
        self.info = dict(re.findall(r"^([A-Z_]+)='?([^'\n]*)'?$",
                                    p.stdout, re.M))
        self.path = self.info['ROOT']

    def chroot(self, *cmd, timeout=300):
        return run(['chroot', self.path] + list(cmd), timeout=timeout)


@pytest.fixture(scope='module')
def scene():
    """(root, earlier version, newer version, status text builder)."""
    if os.geteuid() != 0:
        pytest.skip('chroot needs root')
    root = Root()
    if root.info.get('BUILT') != '1':
        pytest.skip('platform %s is not built (test/platform/root build %s)'
                    % (PLATFORM, PLATFORM))
    if root.info.get('SMBD_PREFIX'):
        pytest.skip('%s runs an smbd built from source, no Debian samba'
                    % PLATFORM)
    p = root.chroot('dpkg-query', '-W', '-f=${Version}', 'samba')
    assert p.returncode == 0, p.stdout
    installed = p.stdout.strip()
    p = root.chroot('apt-cache', 'madison', 'samba')
    assert p.returncode == 0, p.stdout
    known = sorted({l.split('|')[1].strip() for l in p.stdout.splitlines()
                    if l.count('|') >= 2 and 'Packages' in l.split('|')[2]})
    cur = upstream(installed)
    earlier = [v for v in known if upstream(v)[:2] == cur[:2] and
               upstream(v)[2] < cur[2]]
    if not earlier:
        pytest.skip('the apt lists of %s know no earlier patch release of '
                    'samba %d.%d than the installed %s (known: %s)' % (
                        PLATFORM, cur[0], cur[1], installed,
                        ', '.join(known)))
    old = max(earlier, key=upstream)

    # the installed packages built from samba, at the earlier release
    p = root.chroot('dpkg-query', '-W', '-f=${Package}\t${source:Package}'
                    '\t${db:Status-Abbrev}\n')
    assert p.returncode == 0, p.stdout
    names = sorted(l.split('\t')[0] for l in p.stdout.splitlines()
                   if l.count('\t') == 2 and l.split('\t')[1] == 'samba'
                   and l.split('\t')[2].startswith('ii'))
    assert 'samba' in names, p.stdout
    olds = {}
    p = root.chroot('apt-cache', 'show', *names)
    assert p.returncode == 0, p.stdout
    for st in split_stanzas(p.stdout):
        name = field(st, 'Package')
        src = field(st, 'Source') or ''
        m = re.match(r'^samba \((.*)\)$', src)
        src_ver = m.group(1) if m else field(st, 'Version')
        if name in names and name not in olds and src_ver == old and \
                (m or src in ('', 'samba')):
            olds[name] = drop_fields(st, ARCHIVE_ONLY)
    for name in names:
        assert name in olds, ('no stanza of %s built from samba %s in the '
                              'apt lists of %s' % (name, old, PLATFORM))
    with open(os.path.join(root.path, 'var/lib/dpkg/status')) as f:
        machine = split_stanzas(f.read())

    def status(depends):
        out = []
        for st in machine:
            name = field(st, 'Package')
            if name in olds:
                st = olds[name].replace(
                    'Package: %s\n' % name,
                    'Package: %s\nStatus: install ok installed\n' % name, 1)
            out.append(st)
        out.append('\n'.join([
            'Package: %s' % PKG,
            'Status: install ok installed',
            'Version: 0.1.0',
            'Architecture: amd64',
            'Maintainer: glusterfs2 maintainers '
            '<glusterfs2-maintainers@example.org>',
            'Depends: %s' % depends,
            'Description: Samba VFS module serving GlusterFS volumes']))
        return '\n\n'.join(out) + '\n'

    return root, old, installed, sorted(olds), status


def simulate(root, status_text, what):
    """apt-get -s WHAT in the root with status_text as dpkg's status."""
    d = tempfile.mkdtemp(prefix='gf2-upgrade-', dir=os.path.join(
        root.path, 'tmp'))
    try:
        with open(os.path.join(d, 'status'), 'w') as f:
            f.write(status_text)
        inside = '/tmp/' + os.path.basename(d)
        p = root.chroot('apt-get', '-o', 'Dir::State::status=%s/status' %
                        inside, '-o', 'Debug::NoLocking=1', '-o',
                        'APT::Get::Show-Versions=1', '-s', '-q', what)
        assert p.returncode == 0, 'apt-get -s %s failed:\n%s' % (what,
                                                                 p.stdout)
        return p.stdout
    finally:
        shutil.rmtree(d, ignore_errors=True)


def bounds(version):
    p = run([SAMBA_VERSION, '--bounds', version], timeout=30)
    assert p.returncode == 0, p.stdout
    vals = dict(l.split('=', 1) for l in p.stdout.splitlines() if '=' in l)
    return vals['installed'], vals['next']


def test_security_update_is_taken(scene):
    root, old, new, names, status = scene
    low, nxt = bounds(old)
    depends = 'samba (>= %s), samba (<< %s)' % (low, nxt)
    print('%s: samba %s installed with %s (Depends: %s); apt offers %s'
          % (PLATFORM, old, PKG, depends, new))
    for what in ('upgrade', 'dist-upgrade'):
        out = simulate(root, status(depends), what)
        print('apt-get -s %s:\n%s' % (what, '\n'.join(
            l for l in out.splitlines()
            if l.startswith(('Inst', 'Remv', 'Conf')) or 'kept back' in l
            or l.startswith('  ') or 'upgraded' in l)))
        assert re.search(r'^Inst samba \[%s\] \(%s ' % (
            re.escape(old), re.escape(new)), out, re.M), \
            'apt-get -s %s does not take samba %s:\n%s' % (what, new, out)
        assert not kept_back(out), 'kept back: %s\n%s' % (kept_back(out),
                                                          out)
        assert not re.search(r'^Remv ', out, re.M), 'apt removes:\n' + out
        assert not re.search(r'^Inst %s ' % PKG, out, re.M), out
        for name in names:
            assert re.search(r'^Inst %s ' % re.escape(name), out, re.M), \
                '%s is not upgraded with samba:\n%s' % (name, out)


def test_patch_release_bound_holds_samba_back(scene):
    root, old, new, names, status = scene
    m = re.match(r'^((?:\d+:)?)(\d+)\.(\d+)\.(\d+)', old)
    patch_bound = '%s%s.%s.%d~' % (m.group(1), m.group(2), m.group(3),
                                   int(m.group(4)) + 1)
    depends = 'samba (>= %s), samba (<< %s)' % (old, patch_bound)
    out = simulate(root, status(depends), 'upgrade')
    print('with Depends: %s, apt-get -s upgrade:\n%s' % (depends, out))
    assert 'samba' in kept_back(out), out
    assert not re.search(r'^Inst samba ', out, re.M), out
    out = simulate(root, status(depends), 'dist-upgrade')
    print('apt-get -s dist-upgrade:\n%s' % out)
    assert re.search(r'^Remv %s ' % PKG, out, re.M), out
