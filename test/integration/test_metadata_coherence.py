"""Metadata coherence of glusterfs2.

glusterfs2 answers the stat and the DOS attribute / ACL xattrs that smbd
asks for right after a listing from what readdirplus and the listing's
parallel xattr batch returned (source/gf2_mdcache.c).  The documented
rules (README "Metadata", vfs_glusterfs2(8)):

  - a change made through the same connection is seen at once;
  - a change made elsewhere (another client connection, i.e. another smbd
    process, or the FUSE mount) is seen by the next listing and lookup
    at most 1 s after it completed (sooner with upcalls).

Each test lists through connection B first, so that B's smbd process
holds the listing's metadata, then changes things elsewhere and checks
what B sees.  The tests use a private smbd (loopback only, its port the
stack's plus its offset, gf2_private_smbd.PORT_SLOTS; with upcalls
another one, with an offset of its own; GF2_COHERENCE_PORT overrides:
that port and the next) serving the stack's volume with the module named
by GF2_MODULE (default glusterfs2), so that a build installed under another name
(./waf configure --module-name) can be checked before it replaces the
stack's module.
"""

import os
import re
import time
import uuid

import pytest
import smbc

from conftest import Smb, sha256
from gf2_bricks import UPCALL_OPTIONS, gluster
from gf2_private_smbd import PrivateSmbd, private_port
from gf2_smbclient import Session

BOUND = 1.0            # documented age bound, seconds
MARGIN = 0.6           # scheduling slack on a loaded machine


@pytest.fixture(scope='module', params=['default'])
def srv(stack, request):
    """The private smbd; param 'upcalls': the stack's volume with
    UPCALL_OPTIONS for the life of the fixture (reset afterwards)."""
    upcalls = request.param == 'upcalls'
    module = os.environ.get('GF2_MODULE', 'glusterfs2')
    vol = stack['GLUSTER_VOLUME']
    if upcalls:
        for k, v in UPCALL_OPTIONS:
            gluster('volume', 'set', vol, k, v)
    name = 'coherence-up' if upcalls else 'coherence'
    port = private_port(stack, name)
    if os.environ.get('GF2_COHERENCE_PORT'):
        port = int(os.environ['GF2_COHERENCE_PORT']) + (1 if upcalls else 0)
    s = PrivateSmbd(name, stack, port=port)
    s.write_conf([], [('gf2coh', s.gf2_share(vol=vol, vfs=module))])
    try:
        s.start()
        yield s
    finally:
        s.stop()
        if upcalls:
            for k, _ in UPCALL_OPTIONS:
                gluster('volume', 'reset', vol, k)


# The tests of changes made elsewhere run on both: without upcalls
# glusterfs2 serves kept metadata at most 1 s, with them up to 60 s, and
# a change made elsewhere must show within the same bound either way.
BOTH = pytest.mark.parametrize('srv', ['default', 'upcalls'],
                               indirect=True)


@pytest.fixture
def conns(srv):
    a = Smb(srv.client_env(), 'gf2coh')
    b = Session(srv)
    yield a, b
    a.close()
    b.close()


def setmode(srv, path, modes):
    """DOS attributes through a third connection (one smbclient run)."""
    p = srv.smbclient('gf2coh', 'setmode "%s" %s' %
                      (path.replace('/', '\\'), modes))
    assert p.returncode == 0 and 'NT_STATUS' not in p.stdout, p.stdout


@pytest.fixture
def tdir(stack):
    name = 'pytest-coh-%s' % uuid.uuid4().hex[:10]
    path = os.path.join(stack['FUSE_MOUNT'], name)
    os.mkdir(path)
    os.chmod(path, 0o777)
    yield name, path
    for root, dirs, files in os.walk(path, topdown=False):
        for f in files:
            os.unlink(os.path.join(root, f))
        for d in dirs:
            os.rmdir(os.path.join(root, d))
    os.rmdir(path)


def fuse_write(path, data):
    with open(path, 'wb') as f:
        f.write(data)
    os.chmod(path, 0o666)


HIDDEN = 0x2


def test_local_changes_seen_at_once(srv, conns, tdir):
    _, b = conns
    name, path = tdir
    for i in range(20):
        fuse_write(os.path.join(path, 'f%02d' % i), b'x' * 100)
    time.sleep(BOUND + MARGIN)
    got = b.ls(name)
    assert sorted(got) == ['f%02d' % i for i in range(20)]
    assert all(v[1] == 100 for v in got.values()), got
    # changes through B itself are seen at once
    b.cmd('put /etc/hostname %s/f03' % name.replace('/', '\\'))
    size = os.path.getsize('/etc/hostname')
    assert b.info('%s/f03' % name)[1] == size
    assert b.ls(name)['f03'][1] == size
    b.cmd('rename %s\\f04 %s\\g04' % (name, name))
    got = b.ls(name)
    assert 'g04' in got and 'f04' not in got
    assert b.info('%s/f04' % name) is None
    b.cmd('del %s\\f05' % name)
    assert 'f05' not in b.ls(name)
    assert b.info('%s/f05' % name) is None
    assert not b.info('%s/f06' % name)[0] & HIDDEN
    b.cmd('setmode %s\\f06 +h' % name)
    assert b.info('%s/f06' % name)[0] & HIDDEN
    assert 'H' in b.ls(name)['f06'][0]


@BOTH
@pytest.mark.parametrize('via', ['fuse', 'smb'])
def test_remote_changes_seen_within_bound(srv, conns, tdir, via):
    a, b = conns
    name, path = tdir
    for i in range(30):
        fuse_write(os.path.join(path, 'f%02d' % i), b'x' * 100)
    time.sleep(BOUND + MARGIN)
    # B lists and looks at entries: its smbd process now holds the
    # listing's stats and xattr values
    got = b.ls(name)
    assert sorted(got) == ['f%02d' % i for i in range(30)]
    for i in (1, 2, 3, 4, 10):
        attrs, size = b.info('%s/f%02d' % (name, i))
        assert size == 100 and not attrs & HIDDEN
    old_mtime = os.stat(os.path.join(path, 'f10')).st_mtime

    if via == 'fuse':
        fuse_write(os.path.join(path, 'new'), b'n' * 10)
        os.rename(os.path.join(path, 'f01'), os.path.join(path, 'g01'))
        os.unlink(os.path.join(path, 'f02'))
        fuse_write(os.path.join(path, 'f03'), b'z' * 7777)
    else:
        a.write('%s/new' % name, b'n' * 10)
        a.rename('%s/f01' % name, '%s/g01' % name)
        a.unlink('%s/f02' % name)
        a.write('%s/f03' % name, b'z' * 7777)
    os.utime(os.path.join(path, 'f10'), (old_mtime - 86400,
                                         old_mtime - 86400))
    # DOS attributes changed by another client connection
    setmode(srv, '%s/f04' % name, '+h')

    time.sleep(BOUND + MARGIN)
    got = b.ls(name)
    want = sorted(['new', 'g01'] + ['f%02d' % i for i in range(30)
                                    if i not in (1, 2)])
    assert sorted(got) == want
    assert got['new'][1] == 10 and got['g01'][1] == 100
    assert got['f03'][1] == 7777
    assert 'H' in got['f04'][0] and 'H' not in got['f05'][0]
    assert b.info('%s/g01' % name)[1] == 100
    assert b.info('%s/f02' % name) is None
    assert b.info('%s/new' % name)[1] == 10
    assert b.info('%s/f03' % name)[1] == 7777
    assert b.info('%s/f04' % name)[0] & HIDDEN
    out = b.cmd('allinfo %s\\f10' % name)
    # smbclient pads the day of the month with a space ("Dec  1")
    t = time.gmtime(old_mtime - 86400)
    when = r'%s\s+%d ' % (time.strftime('%a %b', t), t.tm_mday)
    assert re.search(r'write_time:\s+%s' % when, out), (when, out)
    back = os.path.join(srv.dir, 'coh-back')
    b.cmd('get %s\\f03 %s' % (name, back))
    with open(back, 'rb') as f:
        assert sha256(f.read()) == sha256(b'z' * 7777)
    os.unlink(back)


INSIDE = 0.7           # well inside the bound: seconds after the fill


@BOTH
def test_upcall_seen_inside_bound(srv, conns, tdir, request):
    """Inside the 1 s bound, B's kept stat of a file changed through FUSE
    is stale without upcalls (the control: what B's process keeps is
    served) and fresh with them (Gluster's upcall dropped it), so that the
    upcall variant fails if upcall mode never engages.  A round whose
    checks could not all be made inside the bound (a loaded machine) is
    tried again."""
    upcalls = request.node.callspec.params['srv'] == 'upcalls'
    _, b = conns
    name, path = tdir
    rounds = []
    for attempt in range(4):
        fname = 'r%d' % attempt
        fuse_write(os.path.join(path, fname), b'x' * 100)
        time.sleep(BOUND + MARGIN)
        t_fill = time.monotonic()
        assert fname in b.ls(name)
        assert b.info('%s/%s' % (name, fname))[1] == 100
        fuse_write(os.path.join(path, fname), b'z' * 7777)
        seen, sizes = None, []
        while time.monotonic() < t_fill + INSIDE:
            sizes.append(b.info('%s/%s' % (name, fname))[1])
            if sizes[-1] == 7777:
                seen = time.monotonic() - t_fill
                break
            time.sleep(0.05)
        last = time.monotonic() - t_fill
        rounds.append((seen, last, sizes))
        if sizes and last < BOUND:
            break
    else:
        pytest.fail('no round checked inside the %.1f s bound: %r' %
                    (BOUND, rounds))
    if upcalls:
        assert seen is not None, (
            'with upcalls, the change is not seen %.1f s after the fill '
            '(sizes %r): upcall mode not engaged?' % (INSIDE, sizes))
    else:
        assert seen is None and set(sizes) == {100}, (
            'without upcalls the kept stat should be served inside the '
            'bound (control): %r' % rounds)


SYSTEM = 0x4


@BOTH
def test_what_b_wrote_itself_yields_to_remote_changes(srv, conns, tdir):
    """B keeps what its own creates and attribute changes left (a new
    file has no DOS attributes yet; the value it wrote is the value
    there): a change made elsewhere afterwards still shows within the
    bound."""
    _, b = conns
    name, _ = tdir
    d = name.replace('/', '\\')
    for c in ('put /etc/hostname %s\\created' % d,
              'put /etc/hostname %s\\written' % d,
              'setmode %s\\written +h' % d):
        out = b.cmd(c)
        assert 'NT_STATUS' not in out, (c, out)
    assert not b.info('%s/created' % name)[0] & HIDDEN
    assert b.info('%s/written' % name)[0] & HIDDEN
    setmode(srv, '%s/created' % name, '+h')
    setmode(srv, '%s/written' % name, '-h+s')
    time.sleep(BOUND + MARGIN)
    assert b.info('%s/created' % name)[0] & HIDDEN
    attrs = b.info('%s/written' % name)[0]
    assert attrs & SYSTEM and not attrs & HIDDEN, hex(attrs)
    got = b.ls(name)
    assert 'H' in got['created'][0]
    assert 'S' in got['written'][0] and 'H' not in got['written'][0]


def test_case_insensitive_open_of_files_made_elsewhere(srv, conns, tdir):
    a, b = conns
    name, path = tdir
    c = Smb(srv.client_env(), 'gf2coh')
    fuse_write(os.path.join(path, 'MixedCase.txt'), b'mixed case data')
    assert c.read('%s/mixedcase.TXT' % name) == b'mixed case data'
    # after a listing of the directory by the same connection: names
    # made elsewhere since are found at once under any case
    assert c.listdir(name) == ['MixedCase.txt']
    fuse_write(os.path.join(path, 'Other.TXT'), b'other')
    assert c.read('%s/other.txt' % name) == b'other'
    a.write('%s/FromSmb.Dat' % name, b'from a')
    assert c.read('%s/FROMSMB.dat' % name) == b'from a'
    assert b.info('%s/fromsmb.DAT' % name) == (0x20, 6)
    # renamed elsewhere: the old name is gone within the bound
    c.listdir(name)
    os.rename(os.path.join(path, 'MixedCase.txt'),
              os.path.join(path, 'Renamed.txt'))
    time.sleep(BOUND + MARGIN)
    with pytest.raises(smbc.NoEntryError):
        c.read('%s/MIXEDCASE.txt' % name)
    assert c.read('%s/renamed.TXT' % name) == b'mixed case data'
    c.close()


def test_old_name_after_remote_rename(srv, conns, tdir):
    """A file renamed by another client, which then rewrites it (150
    bytes instead of 100): within the bound listings show only its new
    name; its old name answers nothing or the renamed file itself as it
    is now (gfapi may still resolve a name it has seen through its inode
    table, the known gap of docs/design.md, in some runs and not in
    others), never the stat kept from before the rename; and once another
    client makes a new file under the old name, the old name answers that
    file, the new name the renamed one."""
    _, b = conns
    name, path = tdir
    fuse_write(os.path.join(path, 'f01'), b'x' * 100)
    time.sleep(BOUND + MARGIN)
    assert 'f01' in b.ls(name)
    assert b.info('%s/f01' % name)[1] == 100
    os.rename(os.path.join(path, 'f01'), os.path.join(path, 'g01'))
    fuse_write(os.path.join(path, 'g01'), b'z' * 150)
    time.sleep(BOUND + MARGIN)
    assert sorted(b.ls(name)) == ['g01']
    old = b.info('%s/f01' % name)
    assert old is None or old[1] == 150, (
        'the old name answers the stat kept from before the rename: %r' %
        (old,))
    fuse_write(os.path.join(path, 'f01'), b'y' * 7)
    time.sleep(BOUND + MARGIN)
    assert sorted(b.ls(name)) == ['f01', 'g01']
    assert b.info('%s/f01' % name)[1] == 7
    assert b.info('%s/g01' % name)[1] == 150
