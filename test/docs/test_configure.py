"""configure takes only a Samba tree of the installed smbd's version.

    python3 -m pytest test/docs

A module is built against the headers of the smbd that loads it, so
`./waf configure` refuses a tree of another version.  One exception, on
request only (--accept-samba-patch-release or
GLUSTERFS2_ACCEPT_SAMBA_PATCH_RELEASE=1): a tree of another patch release
of the same series, when the archive serves no source of the installed
one; configure then says so.  Each case runs the real configure against a
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
