"""The example configurations, the manual page and the option list.

  - every smb.conf.examples/*.conf loads with `testparm -s` without an
    error, an unknown parameter or a warning, and each of its shares loads
    glusterfs2, last in `vfs objects`;
  - every glusterfs2: option the examples use exists in the module, and
    the manual page (docs/vfs_glusterfs2.8), the one option table,
    documents exactly the options the module reads (source/*.c: the
    option table of gf2_options.c and the options read by name), and
    README has no option table of its own but points to the page;
  - the manual page renders without groff or man warnings;
  - standalone.conf works: a private smbd (127.0.0.1, the stack's port
    plus its own offset, directories in .stack/examples/, the stack's users) serves its
    share, pointed at the stack's volume and server, and a file written
    with smbclient reads back with the same checksum, through SMB and on
    the volume's FUSE mount.  A few seconds.
GF2_EXAMPLES_PORT overrides the private smbd's port.
"""

import glob
import os
import re
import shutil
import subprocess
import uuid

import pytest

from conftest import TOP
from gf2_private_smbd import PrivateSmbd, private_port, parse_smb_conf, sha256_file

EXAMPLES_DIR = os.path.join(TOP, 'smb.conf.examples')
EXAMPLES = sorted(glob.glob(os.path.join(EXAMPLES_DIR, '*.conf')))
MANPAGE = os.path.join(TOP, 'docs', 'vfs_glusterfs2.8')
EXPECTED_EXAMPLES = {'standalone.conf', 'acl_xattr.conf', 'fruit.conf',
                     'ctdb.conf', 'media.conf'}


def run_testparm(path):
    p = subprocess.run(['testparm', '-s', '--suppress-prompt', path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, errors='replace', timeout=60)
    return p.returncode, p.stdout, p.stderr


def parse_text(text):
    """testparm's output -> [(section, {key: value})]."""
    sections = []
    cur = None
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith('#'):
            continue
        m = re.match(r'^\[(.+)\]$', s)
        if m:
            cur = (m.group(1), {})
            sections.append(cur)
        elif cur is not None and '=' in s:
            k, v = s.split('=', 1)
            cur[1][' '.join(k.lower().split())] = v.strip()
    return sections


def source_options():
    """The glusterfs2: options the module reads (source/*.c)."""
    opts = set()
    for path in glob.glob(os.path.join(TOP, 'source', '*.c')):
        with open(path) as f:
            text = f.read()
        opts.update(re.findall(
            r'GF2_MODULE_NAME,\s*"([^"]+)"', text))
        # the option table: { "name", GF2_OPT_KIND, ... }
        opts.update(re.findall(r'\{\s*"([^"]+)",\s*GF2_OPT_[A-Z]+,', text))
    return opts


def manpage_options():
    """Options with an entry in the OPTIONS section of the man page."""
    with open(MANPAGE) as f:
        text = f.read()
    section = text.split('.SH "OPTIONS"', 1)[1].split('.SH ', 1)[0]
    return set(m.replace('\\-', '-') for m in re.findall(
        r'^glusterfs2:(.+?) = ', section, re.M))


def readme_options():
    with open(os.path.join(TOP, 'README')) as f:
        return set(re.findall(r'^\| glusterfs2:(.+?) \|', f.read(), re.M))


def example_options(path):
    return set(k.split(':', 1)[1] for sec, items in parse_smb_conf(path)
               for k, _ in items if k.startswith('glusterfs2:'))


def test_example_set():
    names = set(os.path.basename(p) for p in EXAMPLES)
    assert EXPECTED_EXAMPLES <= names, \
        'missing examples: %s' % sorted(EXPECTED_EXAMPLES - names)


@pytest.mark.parametrize('path', EXAMPLES, ids=os.path.basename)
def test_example_loads_with_testparm(path):
    rc, out, err = run_testparm(path)
    both = out + err
    assert rc == 0, 'testparm -s %s failed (%d):\n%s' % (path, rc, both)
    # the examples set no netbios name: Samba takes the machine's host
    # name, which on a test platform (gf2-trixie-backports) is longer than
    # 15 characters; that warning is about the machine, not the example
    bad = [l for l in both.splitlines()
           if re.search(r'Unknown parameter|Ignoring unknown|ERROR|WARNING|'
                        r'not boolean|Invalid|Error', l) and
           not re.search(r"WARNING: The 'netbios name' is too long", l)]
    assert not bad, 'testparm complains about %s:\n%s' % (
        os.path.basename(path), '\n'.join(bad))
    sections = parse_text(out)
    glob_ = dict(sections[0][1]) if sections and \
        sections[0][0] == 'global' else {}
    shares = [(n, kv) for n, kv in sections if n != 'global']
    assert shares, 'no share in %s' % path
    for name, kv in shares:
        vfs = kv.get('vfs objects', glob_.get('vfs objects', '')).split()
        assert 'glusterfs2' in vfs, \
            '[%s] of %s does not load glusterfs2: vfs objects = %s' % (
                name, os.path.basename(path), ' '.join(vfs))
        assert vfs[-1] == 'glusterfs2', \
            '[%s] of %s: glusterfs2 must come last in vfs objects (%s)' % (
                name, os.path.basename(path), ' '.join(vfs))


def test_example_options_exist():
    known = source_options()
    for path in EXAMPLES:
        unknown = example_options(path) - known
        assert not unknown, '%s uses glusterfs2 options the module does ' \
            'not read: %s' % (os.path.basename(path), sorted(unknown))


def test_manpage_documents_every_option():
    src = source_options()
    # the options every user needs; the parser must at least find these
    assert {'volume', 'volfile_server', 'logfile', 'loglevel', 'prefetch',
            'prefetch initial window', 'prefetch max window',
            'prefetch max memory', 'prefetch max age',
            'prefetch coherence', 'prefetch streams',
            'client io-threads'} <= src, sorted(src)
    man = manpage_options()
    assert man == src, 'docs/vfs_glusterfs2.8 OPTIONS: missing %s, ' \
        'unknown %s' % (sorted(src - man), sorted(man - src))
    readme = readme_options()
    assert not readme, "README has an option table (%s): the manual " \
        "page is the one place of it" % sorted(readme)
    with open(os.path.join(TOP, 'README')) as f:
        assert 'docs/vfs_glusterfs2.8' in f.read(), \
            'README does not point to docs/vfs_glusterfs2.8'


def test_manpage_renders_without_warnings():
    p = subprocess.run(['groff', '-man', '-ww', '-z', MANPAGE],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    assert p.returncode == 0 and not p.stdout.strip(), p.stdout
    env = dict(os.environ, MANWIDTH='80', LC_ALL='C.UTF-8')
    p = subprocess.run(['man', '--warnings', '-l', MANPAGE],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, env=env)
    assert p.returncode == 0 and not p.stderr.strip(), p.stderr
    for sec in ('NAME', 'SYNOPSIS', 'DESCRIPTION', 'OPTIONS', 'EXAMPLES',
                'CAVEATS', 'VERSION', 'AUTHOR'):
        assert re.search(r'^%s$' % sec, p.stdout, re.M), \
            'no %s section in the rendered page' % sec
    with open(os.path.join(TOP, 'wscript')) as f:
        version = re.search(r"^VERSION = '([^']+)'", f.read(), re.M).group(1)
    assert 'version %s of glusterfs2' % version in \
        ' '.join(p.stdout.split()), \
        'the VERSION section does not name glusterfs2 %s' % version
    with open(os.path.join(TOP, 'debian', 'changelog')) as f:
        first = f.readline()
    assert '(%s' % version in first, \
        'debian/changelog does not start with version %s: %s' % (
            version, first.strip())


def test_standalone_example_served(stack):
    """standalone.conf's share, pointed at the stack's volume, served by a
    private smbd: put, get and the FUSE mount agree byte for byte."""
    example = os.path.join(EXAMPLES_DIR, 'standalone.conf')
    sections = parse_smb_conf(example)
    glob_items = dict(sections).get('global', [])
    shares = [(n, items) for n, items in sections if n != 'global']
    assert len(shares) == 1, 'standalone.conf should have one share'
    share, items = shares[0]

    srv = PrivateSmbd('examples', stack,
                      port=private_port(stack, 'examples',
                                        'GF2_EXAMPLES_PORT'))
    conf = srv.write_conf(glob_items, [(share, srv.adapt_share(items))],
                          header='smb.conf.examples/standalone.conf, share '
                          '[%s] on the stack volume %s' %
                          (share, stack['GLUSTER_VOLUME']))
    rc, out, err = run_testparm(conf)
    assert rc == 0, out + err

    d = 'pytest-example-%s' % uuid.uuid4().hex[:10]
    local = os.path.join(srv.dir, 'data')
    back = local + '.back'
    size = (8 << 20) + 12345
    with open(local, 'wb') as f:
        f.write(os.urandom(size))
    fuse_dir = os.path.join(stack['FUSE_MOUNT'], d)
    srv.start()
    try:
        p = srv.smbclient(share, 'mkdir %s; put %s %s/file; get %s/file %s'
                          % (d, local, d, d, back))
        assert p.returncode == 0, p.stdout + '\n' + srv.logs()
        assert os.path.getsize(back) == size
        assert sha256_file(back) == sha256_file(local), \
            'the file read back through [%s] differs' % share
        on_volume = os.path.join(fuse_dir, 'file')
        assert os.path.exists(on_volume), \
            'the file is not on volume %s' % stack['GLUSTER_VOLUME']
        assert sha256_file(on_volume) == sha256_file(local), \
            'the file on the volume (FUSE mount) differs'
        # the share was served by glusterfs2: gfapi wrote the log the
        # share's glusterfs2:logfile names
        logs = glob.glob(os.path.join(srv.dir, 'glusterfs2-*.log'))
        assert logs, 'no gfapi log from glusterfs2 in %s' % srv.dir
    finally:
        srv.stop()
        shutil.rmtree(fuse_dir, ignore_errors=True)
        for p in (local, back):
            if os.path.exists(p):
                os.unlink(p)
    assert not srv.our_processes(), 'the private smbd did not stop'
