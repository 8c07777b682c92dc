"""test/stack --platform NAME and scripts/build-deb --platform NAME, from
the host, on one Debian 13 or forky platform (GF2_TEST_PLATFORM: trixie, the
default, trixie-backports or forky):

- `test/stack up --platform NAME` brings the stack up inside the platform;
  `env --platform NAME` has every key of the host's `env` plus PLATFORM,
  PLATFORM_ROOT, PLATFORM_NETNS, PLATFORM_SAMBA and EXEC; SMB_HOST is the
  namespace's address and FUSE_MOUNT, LOCAL_DIR (and the other paths) are
  host paths through the root;
- from the host, smbclient with those keys puts and gets a file through
  [glusterfs2] with equal sha256, and the file is on the volume at
  FUSE_MOUNT; the same through [local] and LOCAL_DIR;
- `exec --platform NAME -- ...` runs the platform's smbclient and gluster
  (EXEC, the key, too), in the checkout, with the command's exit status;
- `status --platform NAME` checks the shares inside and from the host;
- `scripts/build-deb --platform NAME` leaves build-deb/NAME/*.deb
  depending on the platform's exact samba, and test_package.py, run inside
  the platform, installs it with dpkg -i, serves a put/get with checksums
  through a share with vfs objects = glusterfs2, and removes it;
- `down --platform NAME` leaves nothing running (when `up` started the
  platform: no process in its root, no mount under it, no namespace);
- `env --platform bookworm` (and `--platform bookworm env`) is exactly
  `env`, whatever the host's stack is doing.

Every test but the last one is skipped, with that reason printed in the
summary, when the platform's root is not built (test/platform/root build
NAME).  Needs root.  Run from the top of the checkout:

    python3 -m pytest -v -p no:cacheprovider test/platform
"""

import hashlib
import os
import re
import subprocess
import uuid

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
STACK = os.path.join(TOP, 'test', 'stack')
ROOT_TOOL = os.path.join(TOP, 'test', 'platform', 'root')
PLATFORM = os.environ.get('GF2_TEST_PLATFORM', 'trixie')
SAMBA_SERIES = {'trixie': '4.22.', 'trixie-backports': '4.24.',
                'forky': '4.25.', 'trixie-samba423': '4.23.'}
HOST_KEYS = ('SMB_HOST SMB_PORT SMB_USER SMB_PASS SMB_USER2 SMB_PASS2 '
             'SMB_GROUP GLUSTER_VOLUME GLUSTER_HOST FUSE_MOUNT LOCAL_DIR '
             'SMB_CONF SMB_LOGDIR STACK_DIR BRICK_DIRS SHARES '
             'GLUSTERFS2_MODULE MODULE_STATE VFS_MODULE SANITIZE '
             'ASAN_REPORTS ASAN_MODULE').split()
PLATFORM_KEYS = ['PLATFORM', 'PLATFORM_ROOT', 'PLATFORM_NETNS',
                 'PLATFORM_SAMBA', 'EXEC']


def run(cmd, timeout=600, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True,
                          errors='replace', timeout=timeout, **kw)


def parse_env(text):
    env = {}
    for line in text.splitlines():
        if '=' in line:
            k, v = line.split('=', 1)
            if len(v) >= 2 and v[0] == v[-1] == "'":
                v = v[1:-1]
            env[k] = v
    return env


def platform_info():
    p = run([ROOT_TOOL, 'info', PLATFORM], timeout=60)
    assert p.returncode == 0, p.stderr
    return parse_env(p.stdout)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for b in iter(lambda: f.read(1 << 20), b''):
            h.update(b)
    return h.hexdigest()


def root_processes(root):
    pids = []
    for d in os.listdir('/proc'):
        if not d.isdigit():
            continue
        try:
            r = os.readlink('/proc/%s/root' % d)
        except OSError:
            continue
        if r == root or r.startswith(root + '/'):
            pids.append(int(d))
    return pids


def mounts_under(root):
    out = []
    with open('/proc/self/mounts') as f:
        for line in f:
            p = line.split()[1].replace('\\040', ' ')
            if p == root or p.startswith(root + '/'):
                out.append(p)
    return out


@pytest.fixture(scope='module')
def info():
    if os.environ.get('GF2_PLATFORM'):
        pytest.skip('inside platform %s: these tests run on the host'
                    % os.environ['GF2_PLATFORM'])
    if os.geteuid() != 0:
        pytest.skip('needs root (namespaces, mounts, smbd)')
    i = platform_info()
    if i.get('BUILT') != '1':
        pytest.skip('the root of platform %s is not built (%s): run '
                    'test/platform/root build %s' % (PLATFORM, i.get('ROOT'),
                                                      PLATFORM))
    return i


@pytest.fixture(scope='module')
def penv(info):
    """The stack up inside the platform; its env as the host sees it."""
    state = {'was_up': info['UP'] == '1'}
    p = run([STACK, 'up', '--platform', PLATFORM], timeout=1800)
    print(p.stdout[-3000:], p.stderr[-3000:])
    assert p.returncode == 0, 'test/stack up --platform %s failed:\n%s' % (
        PLATFORM, p.stderr[-4000:])
    p = run([STACK, 'env', '--platform', PLATFORM], timeout=120)
    assert p.returncode == 0, p.stderr
    env = parse_env(p.stdout)
    env['_raw'] = p.stdout
    env['_state'] = state
    yield env
    # idempotent: test_down_leaves_nothing has taken it down already
    run([STACK, 'down', '--platform', PLATFORM], timeout=600)


def test_bookworm_env_is_the_plain_env():
    plain = run([STACK, 'env'], timeout=60)
    for args in (['env', '--platform', 'bookworm'],
                 ['--platform', 'bookworm', 'env'],
                 ['env', '--platform=bookworm']):
        p = run([STACK] + args, timeout=60)
        assert (p.returncode, p.stdout, p.stderr) == \
            (plain.returncode, plain.stdout, plain.stderr), args
    print('test/stack env: exit %d, %d lines' % (
        plain.returncode, len(plain.stdout.splitlines())))


def test_env_keys(info, penv):
    keys = [l.split('=', 1)[0] for l in penv['_raw'].splitlines()]
    for k in HOST_KEYS + PLATFORM_KEYS:
        assert k in keys, 'env --platform %s has no %s' % (PLATFORM, k)
    # the host's keys in the host's order, then the platform's
    assert [k for k in keys if k in HOST_KEYS] == list(HOST_KEYS)
    assert penv['PLATFORM'] == PLATFORM
    assert penv['SMB_HOST'] == info['ADDRESS']
    assert not penv['SMB_HOST'].startswith('127.')
    root = penv['PLATFORM_ROOT']
    assert root == info['ROOT']
    for k in ('FUSE_MOUNT', 'LOCAL_DIR', 'SMB_CONF', 'SMB_LOGDIR',
              'STACK_DIR', 'GLUSTERFS2_MODULE'):
        assert penv[k].startswith(root + '/'), (k, penv[k])
        assert os.path.exists(penv[k]), '%s=%s is not there on the host' % (
            k, penv[k])
    for b in penv['BRICK_DIRS'].split():
        assert b.startswith(root + '/') and os.path.isdir(b), b
    assert os.path.ismount(penv['FUSE_MOUNT']), penv['FUSE_MOUNT']
    with open(penv['SMB_CONF']) as f:
        conf = f.read()
    assert re.search(r'interfaces = lo %s\b' % re.escape(info['ADDRESS']),
                     conf), 'smbd does not listen on the namespace address'
    assert penv['MODULE_STATE'] == 'ok', penv['MODULE_STATE']
    assert penv['PLATFORM_SAMBA'].startswith(SAMBA_SERIES[PLATFORM]), \
        penv['PLATFORM_SAMBA']
    # shell-sourceable as documented
    p = run(['bash', '-c', 'eval "$("$0" env --platform "$1")" && '
             'printf "%s|%s|%s\\n" "$SMB_HOST" "$FUSE_MOUNT" "$EXEC"',
             STACK, PLATFORM], timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == '%s|%s|%s' % (
        penv['SMB_HOST'], penv['FUSE_MOUNT'], penv['EXEC'])


ROUND_TRIP = r'''
eval "$("$STACK" env --platform "$PLATFORM")"
smbclient "//$SMB_HOST/$SHARE" -p "$SMB_PORT" -U "$SMB_USER%$SMB_PASS" \
	-c "put $IN $NAME; get $NAME $OUT"
'''


@pytest.mark.parametrize('share,where', [('glusterfs2', 'FUSE_MOUNT'),
                                         ('local', 'LOCAL_DIR')])
def test_round_trip_from_the_host(penv, tmp_path, share, where):
    name = 'pytest-platform-%s' % uuid.uuid4().hex[:10]
    src, back = tmp_path / 'in', tmp_path / 'out'
    with open(src, 'wb') as f:
        f.write(os.urandom((4 << 20) + 12345))
    want = sha256_file(src)
    env = dict(os.environ, STACK=STACK, PLATFORM=PLATFORM, SHARE=share,
               IN=str(src), OUT=str(back), NAME=name)
    p = run(['bash', '-c', ROUND_TRIP], timeout=300, env=env)
    on_volume = os.path.join(penv[where], name)
    try:
        assert p.returncode == 0, p.stdout + p.stderr
        assert sha256_file(back) == want, 'the file read back differs'
        assert sha256_file(on_volume) == want, \
            '%s on the host (%s) differs' % (on_volume, where)
        print('%s: put/get of %d bytes through //%s:%s, sha256 %s, the same '
              'at %s' % (share, os.path.getsize(src), penv['SMB_HOST'],
                         penv['SMB_PORT'], want[:16], on_volume))
    finally:
        if os.path.exists(on_volume):
            os.unlink(on_volume)


def test_exec(penv):
    p = run([STACK, 'exec', '--platform', PLATFORM, '--', 'smbclient',
             '--version'], timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith('Version ' + SAMBA_SERIES[PLATFORM]), p.stdout
    host = run(['smbclient', '--version'], timeout=60).stdout
    assert p.stdout != host
    # the checkout, at the same path; the command's exit status
    p = run([STACK, 'exec', '--platform', PLATFORM, '--', 'pwd'],
            timeout=120, cwd=os.path.join(TOP, 'test'))
    assert p.stdout.strip() == os.path.join(TOP, 'test')
    p = run([STACK, 'exec', '--platform', PLATFORM, '--', 'sh', '-c',
             'exit 3'], timeout=120)
    assert p.returncode == 3
    # EXEC: the platform's gluster knows the stack's volume
    p = run(['bash', '-c', 'eval "$("$0" env --platform "$1")" && '
             '$EXEC gluster --mode=script volume info "$GLUSTER_VOLUME"',
             STACK, PLATFORM], timeout=180)
    assert p.returncode == 0, p.stderr
    assert 'Volume Name: %s' % penv['GLUSTER_VOLUME'] in p.stdout
    assert 'Status: Started' in p.stdout


def test_status(penv):
    p = run([STACK, 'status', '--platform', PLATFORM], timeout=300)
    print(p.stdout)
    assert p.returncode == 0, p.stdout + p.stderr
    assert 'share [glusterfs2]: OK' in p.stdout
    assert 'from the host: //%s/local on port %s: OK' % (
        penv['SMB_HOST'], penv['SMB_PORT']) in p.stdout


def test_package_in_platform(info, penv):
    if info.get('SMBD_PREFIX'):
        pytest.skip('the package is built for the platform\'s Debian samba; '
                    'the smbd of %s is a source build under %s, which no '
                    'Debian package depends on' % (PLATFORM,
                                                   info['SMBD_PREFIX']))
    p = run([os.path.join(TOP, 'scripts', 'build-deb'), '--platform',
             PLATFORM, '--nocheck'], timeout=1800)
    assert p.returncode == 0, p.stderr[-5000:]
    deb = p.stdout.strip().splitlines()[-1]
    assert deb.startswith(os.path.join(TOP, 'build-deb', PLATFORM) + '/')
    assert os.path.isfile(deb), deb
    samba = run([STACK, 'exec', '--platform', PLATFORM, '--', 'dpkg-query',
                 '-W', '-f=${Version}', 'samba'], timeout=120).stdout.strip()
    depends = run(['dpkg-deb', '-f', deb, 'Depends']).stdout
    # the platform's samba up to its next release series
    m = re.match(r'^(\d+:)?(\d+)\.(\d+)\.', samba)
    assert m, samba
    nxt = '%s%s.%d~' % (m.group(1) or '', m.group(2), int(m.group(3)) + 1)
    assert 'samba (>= %s)' % samba in depends, depends
    assert 'samba (<< %s)' % nxt in depends, depends
    print('package %s depends on samba (>= %s) and below the next release '
          'series, %s' % (os.path.basename(deb), samba, nxt))
    # test_package.py inside the platform: dpkg -i, a share with
    # vfs objects = glusterfs2 (smb.conf.examples/standalone.conf) on the
    # stack's volume, put/get with checksums, dpkg -r, module restored
    p = run([STACK, 'exec', '--platform', PLATFORM, '--', 'python3', '-m',
             'pytest', '-v', '-rs', '-p', 'no:cacheprovider',
             'test_package.py'], timeout=1200,
            cwd=os.path.join(TOP, 'test', 'integration'))
    print(p.stdout[-3000:])
    assert p.returncode == 0, p.stdout[-5000:] + p.stderr[-2000:]
    # its two tests: the package served, and a later samba revision of
    # the same release taken with the package in place
    assert re.search(r'\b2 passed\b', p.stdout), p.stdout[-2000:]
    assert 'skipped' not in p.stdout.splitlines()[-1]


def test_down_leaves_nothing(info, penv):
    p = run([STACK, 'down', '--platform', PLATFORM], timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    p = run([STACK, 'env', '--platform', PLATFORM], timeout=120)
    assert p.returncode == 1
    assert 'stack is not up' in p.stderr
    if penv['_state']['was_up']:
        print('the platform was up before the test: left up')
        return
    after = platform_info()
    assert after['UP'] == '0', after
    assert not os.path.exists('/run/netns/' + info['NETNS'])
    assert root_processes(info['ROOT']) == []
    assert mounts_under(info['ROOT']) == []
    p = run([STACK, 'status', '--platform', PLATFORM], timeout=120)
    assert 'not up' in p.stdout
