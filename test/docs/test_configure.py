"""configure takes only a Samba tree of the installed smbd's version,
unless told the tree is for another Samba (--samba-tree-without-smbd).

    python3 -m pytest test/docs

A module is built against the headers of the smbd that loads it, so
`./waf configure` refuses a tree of another version.  One exception, on
request only (--accept-samba-patch-release or
GLUSTERFS2_ACCEPT_SAMBA_PATCH_RELEASE=1): a tree of another patch release
of the same series, when the archive serves no source of the installed
one; configure then says so.  A test build's claimed release
(--samba-version-override) must be MAJOR.MINOR.RELEASE.  Each case runs the real configure against a
tree made here (the configured tree's vfs.h and waf, a VERSION file of the
case's release) and reads where it stopped: past the version check, a tree
without config.h stops at "is not configured".
"""

import os
import re
import shutil
import subprocess

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))


def _real_tree():
    tree = os.environ.get('GLUSTERFS2_SAMBA_TREE')
    if not tree:
        with open(os.path.join(TOP, 'build', '.samba-source')) as f:
            tree = f.read().strip()
    assert os.path.isfile(os.path.join(tree, 'buildtools', 'bin', 'waf')), \
        'no configured Samba tree (configure the checkout first)'
    return tree


def _smbd_version():
    out = subprocess.run(['smbd', '-V'], stdout=subprocess.PIPE,
                         universal_newlines=True, check=True).stdout
    return tuple(int(x) for x in
                 re.search(r'(\d+)\.(\d+)\.(\d+)', out).groups())


@pytest.fixture(scope='module')
def real_tree():
    return _real_tree()


def _configure(tmp_path, real, version, extra=(), env_accept=False):
    tree = tmp_path / ('samba-%d.%d.%d' % version)
    (tree / 'source3' / 'include').mkdir(parents=True)
    shutil.copy(os.path.join(real, 'source3', 'include', 'vfs.h'),
                tree / 'source3' / 'include' / 'vfs.h')
    (tree / 'VERSION').write_text(
        'SAMBA_VERSION_MAJOR=%d\nSAMBA_VERSION_MINOR=%d\n'
        'SAMBA_VERSION_RELEASE=%d\n' % version)
    os.symlink(os.path.join(real, 'buildtools'), tree / 'buildtools')
    env = dict(os.environ, PYTHONHASHSEED='1',
               WAFLOCK='.lock-waf-test-configure')
    env.pop('GLUSTERFS2_SAMBA_TREE', None)
    env.pop('GLUSTERFS2_ACCEPT_SAMBA_PATCH_RELEASE', None)
    if env_accept:
        env['GLUSTERFS2_ACCEPT_SAMBA_PATCH_RELEASE'] = '1'
    try:
        p = subprocess.run(
            ['/usr/bin/python3', os.path.join(real, 'buildtools', 'bin',
                                              'waf'),
             'configure', '--samba-source=%s' % tree,
             '--out=%s' % (tmp_path / 'build')] + list(extra),
            cwd=TOP, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, universal_newlines=True, timeout=300)
    finally:
        lock = os.path.join(TOP, '.lock-waf-test-configure')
        if os.path.exists(lock):
            os.unlink(lock)
    return p


def _other_patch(v):
    return (v[0], v[1], v[2] - 1 if v[2] > 0 else v[2] + 1)


def test_same_version_passes_the_version_check(tmp_path, real_tree):
    p = _configure(tmp_path, real_tree, _smbd_version())
    assert p.returncode != 0, p.stdout     # the made tree is unconfigured
    assert 'is not configured' in p.stdout, p.stdout
    assert 'installed smbd is' not in p.stdout, p.stdout


def test_other_patch_release_refused_by_default(tmp_path, real_tree):
    v = _smbd_version()
    p = _configure(tmp_path, real_tree, _other_patch(v))
    assert p.returncode != 0
    assert 'is version %d.%d.%d but the installed smbd is %d.%d.%d' % (
        _other_patch(v) + v) in p.stdout, p.stdout
    assert '--accept-samba-patch-release' in p.stdout, p.stdout
    assert 'is not configured' not in p.stdout, p.stdout


@pytest.mark.parametrize('how', ['option', 'environment'])
def test_other_patch_release_accepted_on_request(tmp_path, real_tree, how):
    v = _smbd_version()
    o = _other_patch(v)
    p = _configure(tmp_path, real_tree, o,
                   extra=['--accept-samba-patch-release']
                   if how == 'option' else [],
                   env_accept=how == 'environment')
    assert 'accepted: %d.%d.%d for smbd %d.%d.%d' % (o + v) in p.stdout, \
        p.stdout
    assert 'is not configured' in p.stdout, p.stdout


def test_other_series_refused_even_on_request(tmp_path, real_tree):
    v = _smbd_version()
    o = (v[0], v[1] + 1, 0)
    p = _configure(tmp_path, real_tree, o,
                   extra=['--accept-samba-patch-release'])
    assert p.returncode != 0
    assert 'is version %d.%d.%d but the installed smbd is' % o in p.stdout, \
        p.stdout
    assert 'accepted' not in p.stdout, p.stdout
    assert 'is not configured' not in p.stdout, p.stdout


def test_other_release_taken_with_tree_without_smbd(tmp_path, real_tree):
    """--samba-tree-without-smbd: a tree of another release series is
    built for, said so, and no installed smbd is compared with it."""
    v = _smbd_version()
    o = (v[0], v[1] + 2, 9)
    p = _configure(tmp_path, real_tree, o,
                   extra=['--samba-tree-without-smbd'])
    assert 'Samba %d.%d.%d without its smbd' % o in p.stdout, p.stdout
    assert 'but the installed smbd is' not in p.stdout, p.stdout
    assert 'is not configured' in p.stdout, p.stdout


def test_tree_without_smbd_needs_the_tree(tmp_path, real_tree):
    env = dict(os.environ, PYTHONHASHSEED='1',
               WAFLOCK='.lock-waf-test-configure')
    env.pop('GLUSTERFS2_SAMBA_TREE', None)
    try:
        p = subprocess.run(
            ['/usr/bin/python3', os.path.join(real_tree, 'buildtools', 'bin',
                                              'waf'),
             'configure', '--samba-tree-without-smbd',
             '--out=%s' % (tmp_path / 'build')],
            cwd=TOP, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, universal_newlines=True, timeout=300)
    finally:
        lock = os.path.join(TOP, '.lock-waf-test-configure')
        if os.path.exists(lock):
            os.unlink(lock)
    assert p.returncode != 0
    assert '--samba-tree-without-smbd needs --samba-source' in p.stdout, \
        p.stdout


@pytest.mark.parametrize('value', ['', '4.16', 'x.y.z', '4.16.0-1'])
def test_version_override_refuses_a_bad_value(tmp_path, real_tree, value):
    p = _configure(tmp_path, real_tree, _smbd_version(),
                   extra=['--samba-version-override=' + value])
    assert p.returncode != 0
    assert '--samba-version-override=%r: MAJOR.MINOR.RELEASE expected' % \
        value in p.stdout, p.stdout
    assert 'is not configured' not in p.stdout, p.stdout


def test_version_override_taken(tmp_path, real_tree):
    """A test build's claimed release passes configure's checks (the
    module compares it with the running smbd's when loaded)."""
    p = _configure(tmp_path, real_tree, _smbd_version(),
                   extra=['--samba-version-override=4.16.0'])
    assert 'MAJOR.MINOR.RELEASE expected' not in p.stdout, p.stdout
    assert 'is not configured' in p.stdout, p.stdout


def _exported_by_installed_smbd():
    smbd = shutil.which('smbd')
    libs = [smbd] + re.findall(r'=>\s*(/\S+)', subprocess.run(
        ['ldd', smbd], stdout=subprocess.PIPE, universal_newlines=True,
        check=True).stdout)
    names = set()
    for lib in libs:
        out = subprocess.run(['nm', '-D', '--defined-only', lib],
                             stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL,
                             universal_newlines=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 3:
                names.add(parts[2].split('@')[0])
    return names


def test_tree_exports_match_the_installed_smbd(real_tree):
    """scripts/samba-tree-exports, read from the installed smbd's own tree,
    lists every Samba symbol the module needs that this smbd exports, and
    not the subsystems only modules carry (POSIXACL_XATTR, which the stock
    vfs_glusterfs links in and smbd does not export)."""
    so = os.path.join(TOP, 'build', _module_name() + '.so')
    assert os.path.isfile(so), 'build the checkout first (%s)' % so
    listed = set(subprocess.run(
        [os.path.join(TOP, 'scripts', 'samba-tree-exports'), real_tree],
        stdout=subprocess.PIPE, universal_newlines=True,
        check=True).stdout.split())
    needed = set()
    for line in subprocess.run(['nm', '-D', '--undefined-only', so],
                               stdout=subprocess.PIPE,
                               universal_newlines=True,
                               check=True).stdout.splitlines():
        parts = line.split()
        if parts and parts[0] == 'U':
            needed.add(parts[1].split('@')[0])
    exported = _exported_by_installed_smbd()
    samba_needed = {s for s in needed & exported if not _is_libc(s)}
    assert len(samba_needed) > 50
    assert samba_needed <= listed, sorted(samba_needed - listed)
    assert 'smb_register_vfs' in listed
    assert 'posixacl_xattr_acl_get_fd' not in listed
    assert 'posixacl_xattr_acl_get_fd' not in exported


def _module_name():
    """The module's name as build/ is configured (--module-name: test/stack
    with GF2_STACK_MODULE=NAME builds NAME.so), glusterfs2 by default."""
    try:
        with open(os.path.join(TOP, 'build', 'c4che', '_cache.py')) as f:
            m = re.search(r"^MODULE_NAME = '([A-Za-z0-9_]+)'$", f.read(),
                          re.M)
    except FileNotFoundError:
        m = None
    return m.group(1) if m else 'glusterfs2'


def _is_libc(name):
    if not hasattr(_is_libc, 'names'):
        libc = subprocess.run(['nm', '-D', '--defined-only', _libc_path()],
                              stdout=subprocess.PIPE,
                              universal_newlines=True).stdout
        _is_libc.names = {line.split()[2].split('@')[0]
                          for line in libc.splitlines()
                          if len(line.split()) >= 3}
    return name in _is_libc.names


def _libc_path():
    out = subprocess.run(['ldd', shutil.which('smbd')],
                         stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    return re.search(r'libc\.so\.6\s*=>\s*(/\S+)', out).group(1)
