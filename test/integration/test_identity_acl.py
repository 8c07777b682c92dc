"""Identity and POSIX ACLs: glusterfs2 against the local file system.

Every check runs the same steps on the glusterfs2 share and on the
`local` share (smbd's default VFS and vfs_posixacl on an ext4/xfs
directory), and asserts both a concrete outcome and that the two shares
agree: who may open what (NTSTATUS from smbclient), who owns what is
created (stat on the file systems), and how NT ACLs set with smbcacls
become POSIX ACLs (getfacl) and come back.

Where the stock vfs_glusterfs behaves differently, a test named
test_stock_* records what it does (these document Samba 4.17's module,
not ours).

Tools: smbclient (access checks), smbcacls (NT ACLs; it always connects
to port 445, so a fixture forwards a loopback address's port 445 to the
stack's smbd), python3-samba (an ACL set through a handle opened for
data), getfacl on the local directory and on FUSE mounts of the volume
made with `-o acl` (the stack's own FUSE mount has no ACL support).
"""

import grp
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

# ---------------------------------------------------------------- helpers

def _run(argv, timeout=120):
    return subprocess.run(argv, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True,
                          timeout=timeout)


def smbclient(stack, share, user, cmds):
    """Run smbclient commands in one session as user 1 or 2; output."""
    cred = {1: (stack['SMB_USER'], stack['SMB_PASS']),
            2: (stack['SMB_USER2'], stack['SMB_PASS2'])}[user]
    p = _run(['smbclient', '//%s/%s' % (stack['SMB_HOST'], share),
              '-p', stack['SMB_PORT'], '-U', '%s%%%s' % cred,
              '-c', '; '.join(cmds)])
    if 'NT_STATUS_LOGON_FAILURE' in p.stdout or \
            'Connection to' in p.stdout:
        pytest.fail('smbclient could not connect: %s' % p.stdout)
    return p.stdout


def smb_status(stack, share, user, cmd):
    """The NTSTATUS of one smbclient command in its own session."""
    out = smbclient(stack, share, user, [cmd])
    m = re.search(r'(NT_STATUS_[A-Z_]+)', out)
    return m.group(1) if m else 'NT_STATUS_OK'


def domain(stack):
    """The name of the server's local SAM (its netbios name)."""
    with open(stack['SMB_CONF']) as f:
        m = re.search(r'^\s*netbios name\s*=\s*(\S+)', f.read(), re.M)
    assert m, 'no netbios name in ' + stack['SMB_CONF']
    return m.group(1)


def getfacl(path, default=False):
    """The ACL entries of path (numeric ids), or its default:* entries."""
    p = _run(['getfacl', '-n', '--omit-header', '-p', path])
    assert p.returncode == 0, p.stdout
    lines = [line for line in p.stdout.splitlines() if line.strip()]
    if default:
        return [line for line in lines if line.startswith('default:')]
    return lines


def nt_acl_lines(out):
    return [line for line in out.splitlines()
            if line.startswith(('OWNER:', 'GROUP:', 'ACL:', 'CONTROL:'))]


# Loopback ADDR:445 -> the stack's smbd (smbcacls has no port option in
# Samba 4.17).  A process of its own: python3-samba's calls hold the GIL
# while they wait for the server, which would starve a forwarding thread.
FORWARDER = r"""
import os, socket, sys, threading, time
target = (sys.argv[1], int(sys.argv[2]))
parent = os.getppid()

def watch():
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(0)

threading.Thread(target=watch, daemon=True).start()
for last in range(1, 40):
    addr = '127.0.45.%d' % last
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        ls.bind((addr, 445))
        break
    except OSError:
        ls.close()
else:
    sys.exit('no free loopback address for port 445')
ls.listen(32)
print(addr, flush=True)

def pump(a, b):
    try:
        while True:
            data = a.recv(1 << 16)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

while True:
    c, _ = ls.accept()
    try:
        s = socket.create_connection(target)
    except OSError:
        c.close()
        continue
    threading.Thread(target=pump, args=(c, s), daemon=True).start()
    threading.Thread(target=pump, args=(s, c), daemon=True).start()
"""


@pytest.fixture(scope='module')
def cacls_host(stack):
    if os.geteuid() != 0:
        pytest.skip('needs root (port 445 forwarder, chown)')
    p = subprocess.Popen([sys.executable, '-c', FORWARDER, stack['SMB_HOST'],
                          stack['SMB_PORT']], stdout=subprocess.PIPE,
                         universal_newlines=True)
    addr = p.stdout.readline().strip()
    if not addr:
        p.wait()
        pytest.fail('the port 445 forwarder did not start')
    yield addr
    p.terminate()
    p.wait()


def smbcacls(stack, host, share, path, *args):
    """smbcacls as gf2user1.  With arguments (a change), only the DACL is
    written: smbcacls would otherwise also ask for WRITE_OWNER, which a
    file's owner does not have."""
    extra = ['--set-security-info=4'] if args else []
    return _run(['smbcacls', '//%s/%s' % (host, share), path, '-U',
                 '%s%%%s' % (stack['SMB_USER'], stack['SMB_PASS'])] +
                extra + list(args))


def show_acl(stack, host, share, path):
    p = smbcacls(stack, host, share, path)
    assert p.returncode == 0, p.stdout
    return nt_acl_lines(p.stdout)


class Work:
    """A fresh directory (mode 1777) on the volume and in the local share.

    path(share, rel) is where a share's object is on a file system: on
    the stack's FUSE mount for the gfapi shares, in the local directory
    for `local`.  rel(rel) is its name inside the shares.  facl() reads
    its ACL.
    """

    def __init__(self, stack):
        self.stack = stack
        self.name = 'pytest-acl-%s' % uuid.uuid4().hex[:10]
        self.roots = [os.path.join(stack['FUSE_MOUNT'], self.name),
                      os.path.join(stack['LOCAL_DIR'], self.name)]
        for r in self.roots:
            os.mkdir(r)
            os.chmod(r, 0o1777)
        self.u1 = pwd.getpwnam(stack['SMB_USER'])
        self.u2 = pwd.getpwnam(stack['SMB_USER2'])
        self.group = grp.getgrnam(stack['SMB_GROUP'])
        self.dom = domain(stack)
        self.src = os.path.join(self.roots[1], '.src')
        with open(self.src, 'w') as f:
            f.write('from the client\n')
        os.chmod(self.src, 0o644)

    def path(self, share, rel=''):
        base = (self.stack['LOCAL_DIR'] if share == 'local'
                else self.stack['FUSE_MOUNT'])
        return os.path.join(base, self.name, rel)

    def rel(self, rel):
        return '%s/%s' % (self.name, rel)

    def facl(self, share, rel, default=False):
        """getfacl of an object of share.  For the volume, through a FUSE
        mount with -o acl made for this one look (the stack's mount has
        no ACLs; and the kernel keeps the ACLs of a FUSE inode cached
        until the file system invalidates them, so a change made through
        gfapi that leaves the mode alone, such as revoking a named entry
        under an unchanged mask, would go unseen on a long-lived
        mount)."""
        if share == 'local':
            return getfacl(self.path(share, rel), default)
        d = tempfile.mkdtemp(prefix='gf2-aclview-')
        try:
            p = _run(['mount', '-t', 'glusterfs', '-o', 'acl',
                      '%s:/%s' % (self.stack['GLUSTER_HOST'],
                                  self.stack['GLUSTER_VOLUME']), d])
            assert p.returncode == 0, p.stdout
            try:
                return getfacl(os.path.join(d, self.name, rel), default)
            finally:
                _run(['umount', d])
        finally:
            os.rmdir(d)

    def mkfile(self, share, rel, mode, uid=None, gid=None,
               data='for your eyes only\n'):
        p = self.path(share, rel)
        with open(p, 'w') as f:
            f.write(data)
        os.chown(p, self.u1.pw_uid if uid is None else uid,
                 self.u1.pw_gid if gid is None else gid)
        os.chmod(p, mode)
        return p

    def mkdir(self, share, rel, mode, uid=None, gid=None):
        p = self.path(share, rel)
        os.mkdir(p)
        os.chown(p, self.u1.pw_uid if uid is None else uid,
                 self.u1.pw_gid if gid is None else gid)
        os.chmod(p, mode)
        return p

    def fetch(self, share, user, rel):
        """(NTSTATUS, content or None) of `get` as user 1 or 2."""
        dst = os.path.join(tempfile.gettempdir(),
                           '%s-%s-%d' % (self.name, share, user))
        st = smb_status(self.stack, share, user,
                        'get %s %s' % (self.rel(rel), dst))
        content = None
        if os.path.exists(dst):
            with open(dst) as f:
                content = f.read()
            os.unlink(dst)
        return st, content

    def cleanup(self):
        for r in self.roots:
            shutil.rmtree(r, ignore_errors=True)


@pytest.fixture
def work(stack):
    w = Work(stack)
    yield w
    w.cleanup()


def settle():
    # md-cache (1 s) of the smbd's gfapi client may hold attributes of
    # an object changed behind it through the FUSE mount.
    time.sleep(1.2)


SHARES = ('glusterfs2', 'local')


# --------------------------------------------------------------- identity

def test_private_file_denied_to_other_user(stack, work):
    """A 0600 file of gf2user1: gf2user2 can neither read, overwrite nor
    delete it, gf2user1 reads it; the same NTSTATUS on glusterfs2 as on
    local."""
    for share in SHARES:
        work.mkfile(share, 'secret-' + share, 0o600)
    settle()
    got = {}
    for share in SHARES:
        rel = work.rel('secret-' + share)
        got[share] = (
            work.fetch(share, 2, 'secret-' + share),
            smb_status(stack, share, 2, 'put %s %s' % (work.src, rel)),
            smb_status(stack, share, 2, 'del %s' % rel),
            work.fetch(share, 1, 'secret-' + share))
    assert got['local'] == (('NT_STATUS_ACCESS_DENIED', None),
                            'NT_STATUS_ACCESS_DENIED',
                            'NT_STATUS_ACCESS_DENIED',
                            ('NT_STATUS_OK', 'for your eyes only\n'))
    assert got['glusterfs2'] == got['local']


def test_group_writable_directory(stack, work):
    """root:gf2group 0775: gf2user1 (a member of gf2group) creates a file
    and a directory in it, gf2user2 cannot.  Gluster must get the
    supplementary groups of the user smbd acts for."""
    for share in SHARES:
        work.mkdir(share, 'team-' + share, 0o775, uid=0,
                   gid=work.group.gr_gid)
    settle()
    got = {}
    for share in SHARES:
        d = work.rel('team-' + share)
        res = []
        for user in (1, 2):
            res.append((
                smb_status(stack, share, user,
                           'put %s %s/file%d' % (work.src, d, user)),
                smb_status(stack, share, user,
                           'mkdir %s/dir%d' % (d, user))))
        got[share] = (res,
                      sorted(os.listdir(work.path(share, 'team-' + share))))
    assert got['local'] == (
        [('NT_STATUS_OK', 'NT_STATUS_OK'),
         ('NT_STATUS_ACCESS_DENIED', 'NT_STATUS_ACCESS_DENIED')],
        ['dir1', 'file1'])
    assert got['glusterfs2'] == got['local']


def test_created_objects_owner_group_mode(stack, work):
    """A file and a directory created by gf2user1 belong to gf2user1 and
    its primary group, or to the parent's group under setgid (and the
    new directory inherits setgid): the same owner, group and mode on the
    volume (FUSE stat) as in the local directory."""
    for share in SHARES:
        work.mkdir(share, 'sgid-' + share, 0o2777, uid=0,
                   gid=work.group.gr_gid)
    settle()
    got = {}
    for share in SHARES:
        smbclient(stack, share, 1, [
            'put %s %s' % (work.src, work.rel('f-' + share)),
            'mkdir %s' % work.rel('d-' + share),
            'put %s %s/f' % (work.src, work.rel('sgid-' + share)),
            'mkdir %s/d' % work.rel('sgid-' + share)])
        res = []
        for rel in ('f-' + share, 'd-' + share, 'sgid-%s/f' % share,
                    'sgid-%s/d' % share):
            st = os.stat(work.path(share, rel))
            res.append((st.st_uid, st.st_gid, oct(st.st_mode)))
        got[share] = res
    uid, gid, sgid = work.u1.pw_uid, work.u1.pw_gid, work.group.gr_gid
    assert [(u, g) for u, g, _ in got['local']] == [
        (uid, gid), (uid, gid), (uid, sgid), (uid, sgid)]
    assert int(got['local'][3][2], 8) & 0o2000
    assert got['glusterfs2'] == got['local']


# ------------------------------------------------------------ POSIX ACLs

def test_nt_acl_without_posix_acl_matches_local(stack, work, cacls_host):
    """A file and a directory without ACL xattrs show the NT ACL built
    from their mode, as on local; a directory without a default ACL has
    no inheritable entries."""
    for share in SHARES:
        work.mkfile(share, 'plain-' + share, 0o640)
        work.mkdir(share, 'plaindir-' + share, 0o750)
    settle()
    got = {}
    for share in SHARES:
        got[share] = (
            show_acl(stack, cacls_host, share, work.rel('plain-' + share)),
            show_acl(stack, cacls_host, share,
                     work.rel('plaindir-' + share)))
    f_acl, d_acl = got['local']
    assert 'OWNER:%s\\%s' % (work.dom, stack['SMB_USER']) in f_acl
    assert 'ACL:%s\\%s:ALLOWED/0x0/RW' % (work.dom, stack['SMB_USER']) \
        in f_acl
    assert 'ACL:%s\\%s:ALLOWED/0x0/FULL' % (work.dom, stack['SMB_USER']) \
        in d_acl
    assert not any('/OI' in l or '/CI' in l for l in d_acl), d_acl
    assert got['glusterfs2'] == got['local']


def test_nt_acl_grants_and_revokes_read(stack, work, cacls_host):
    """smbcacls grants gf2user2 READ on gf2user1's 0600 file: gf2user2
    reads it and getfacl on the volume shows user:UID2:r-x with a mask;
    deleting the entry revokes both.  The POSIX ACLs are the same as on
    local at every step."""
    ace = 'ACL:%s\\%s:ALLOWED/0x0/READ' % (work.dom, stack['SMB_USER2'])
    named = 'user:%d:r-x' % work.u2.pw_uid
    for share in SHARES:
        work.mkfile(share, 'shared-' + share, 0o600)
    settle()
    got = {}
    for share in SHARES:
        name = 'shared-' + share
        rel = work.rel(name)
        before = work.fetch(share, 2, name)
        p = smbcacls(stack, cacls_host, share, rel, '--add', ace)
        assert p.returncode == 0, p.stdout
        granted = (work.facl(share, name),
                   show_acl(stack, cacls_host, share, rel),
                   work.fetch(share, 2, name))
        p = smbcacls(stack, cacls_host, share, rel, '--delete', ace)
        assert p.returncode == 0, p.stdout
        revoked = (work.facl(share, name),
                   show_acl(stack, cacls_host, share, rel),
                   work.fetch(share, 2, name))
        got[share] = (before, granted, revoked)

    before, granted, revoked = got['glusterfs2']
    assert before == ('NT_STATUS_ACCESS_DENIED', None)
    assert named in granted[0], granted[0]
    assert any(l.startswith('mask::') for l in granted[0]), granted[0]
    assert ace in granted[1], granted[1]
    assert granted[2] == ('NT_STATUS_OK', 'for your eyes only\n')
    assert not any(l.startswith('user:%d:' % work.u2.pw_uid)
                   for l in revoked[0]), revoked[0]
    assert ace not in revoked[1], revoked[1]
    assert revoked[2] == ('NT_STATUS_ACCESS_DENIED', None)
    assert got['glusterfs2'] == got['local']


def test_default_acl_is_inherited(stack, work, cacls_host):
    """An inheritable (OI|CI) entry on a directory becomes a POSIX
    default ACL; a file and a directory created inside through SMB
    inherit it, and gf2user2 reads the new file.  The same ACLs and mode
    as on local."""
    ace = 'ACL:%s\\%s:ALLOWED/OI|CI/RX' % (work.dom, stack['SMB_USER2'])
    uid2 = work.u2.pw_uid
    for share in SHARES:
        work.mkdir(share, 'inherit-' + share, 0o700)
    settle()
    got = {}
    for share in SHARES:
        name = 'inherit-' + share
        p = smbcacls(stack, cacls_host, share, work.rel(name), '--add', ace)
        assert p.returncode == 0, p.stdout
        smbclient(stack, share, 1, [
            'put %s %s/new' % (work.src, work.rel(name)),
            'mkdir %s/sub' % work.rel(name)])
        d = work.path(share, name)
        got[share] = (work.facl(share, name, default=True),
                      work.facl(share, name + '/new'),
                      work.facl(share, name + '/sub'),
                      oct(os.stat(d + '/new').st_mode),
                      work.fetch(share, 2, name + '/new'))
    dflt, new, sub, mode, fetched = got['glusterfs2']
    assert 'default:user:%d:r-x' % uid2 in dflt, dflt
    assert any(l.startswith('user:%d:r-x' % uid2) for l in new), new
    assert 'default:user:%d:r-x' % uid2 in sub, sub
    assert fetched == ('NT_STATUS_OK', 'from the client\n')
    assert got['glusterfs2'] == got['local']


# Open a file for reading data and WRITE_DAC, add an ACE granting SID
# read to its DACL through that handle, read the data and the DACL back
# through it; prints [data, sddl] as JSON.  In a process of its own:
# python3-samba and python3-smbc (conftest) crash when loaded together.
SET_SD_ON_HANDLE = r"""
import json, sys
from samba import credentials
from samba.dcerpc import security
from samba.samba3 import libsmb_samba_internal as libsmb
from samba.samba3 import param as s3param
host, share, path, user, password, sid = sys.argv[1:7]
lp = s3param.get_context()
lp.load('/dev/null')
creds = credentials.Credentials()
creds.guess(lp)
creds.set_username(user)
creds.set_password(password)
c = libsmb.Conn(host, share, lp, creds)
fnum = c.create(path, DesiredAccess=(security.SEC_FILE_READ_DATA |
                                     security.SEC_STD_READ_CONTROL |
                                     security.SEC_STD_WRITE_DAC))
sd = c.get_sd(fnum, security.SECINFO_DACL)
ace = security.ace()
ace.type = security.SEC_ACE_TYPE_ACCESS_ALLOWED
ace.access_mask = security.SEC_RIGHTS_FILE_READ
ace.trustee = security.dom_sid(sid)
sd.dacl_add(ace)
c.set_sd(fnum, sd, security.SECINFO_DACL)
data = c.read(fnum, 0, 100).decode()
back = c.get_sd(fnum, security.SECINFO_DACL).as_sddl()
c.close(fnum)
print(json.dumps([data, back]))
"""


def test_acl_set_through_open_handle(stack, work, cacls_host):
    """An NT ACL set on a handle opened for reading data (a real glfs_fd,
    not a path-only handle) lands as on local, and reads back through
    the same handle."""
    p = _run(['pdbedit', '-s', stack['SMB_CONF'], '-L', '-v',
              stack['SMB_USER2']])
    m = re.search(r'User SID:\s*(S-[0-9-]+)', p.stdout)
    assert m, p.stdout
    sid2 = m.group(1)
    for share in SHARES:
        work.mkfile(share, 'fd-' + share, 0o600)
    settle()
    got = {}
    for share in SHARES:
        p = _run([sys.executable, '-c', SET_SD_ON_HANDLE, cacls_host, share,
                  work.rel('fd-' + share), stack['SMB_USER'],
                  stack['SMB_PASS'], sid2])
        assert p.returncode == 0, p.stdout
        data, back = json.loads(p.stdout.splitlines()[-1])
        got[share] = (data, work.facl(share, 'fd-' + share), back)
    data, acl, back = got['glusterfs2']
    assert data == 'for your eyes only\n'
    assert 'user:%d:r--' % work.u2.pw_uid in acl, acl
    # FILE_GENERIC_READ: Samba 4.22's SDDL encoder writes it as FR
    assert ('(A;;0x00120089;;;%s)' % sid2 in back or
            '(A;;FR;;;%s)' % sid2 in back), back
    assert got['glusterfs2'] == got['local']


def _nodefault_acl(stack, work):
    return ('ACL:%s\\%s:ALLOWED/0x0/FULL,ACL:%s\\%s:ALLOWED/0x0/RX' %
            (work.dom, stack['SMB_USER'], work.dom, stack['SMB_USER2']))


def test_dacl_without_inheritable_entries_on_directory(stack, work,
                                                       cacls_host):
    """A DACL without inheritable entries on a directory that has no
    default ACL: smbd removes the (absent) default ACL, which must
    succeed, as on local."""
    for share in SHARES:
        work.mkdir(share, 'nodefault-' + share, 0o700)
    settle()
    got = {}
    for share in SHARES:
        name = 'nodefault-' + share
        p = smbcacls(stack, cacls_host, share, work.rel(name), '--set',
                     _nodefault_acl(stack, work))
        got[share] = (p.returncode, p.stdout.strip(),
                      work.facl(share, name),
                      work.facl(share, name, default=True))
    rc, out, access, dflt = got['glusterfs2']
    assert (rc, out) == (0, '')
    assert 'user:%d:r-x' % work.u2.pw_uid in access, access
    assert dflt == []
    assert got['glusterfs2'] == got['local']


def test_removing_inheritable_entries_removes_default_acl(stack, work,
                                                          cacls_host):
    """Setting a DACL without inheritable entries on a directory that
    has a default ACL removes the default ACL, as on local."""
    ace = 'ACL:%s\\%s:ALLOWED/OI|CI/RX' % (work.dom, stack['SMB_USER2'])
    for share in SHARES:
        work.mkdir(share, 'dropdefault-' + share, 0o700)
    settle()
    got = {}
    for share in SHARES:
        name = 'dropdefault-' + share
        p = smbcacls(stack, cacls_host, share, work.rel(name), '--add', ace)
        assert p.returncode == 0, p.stdout
        had = work.facl(share, name, default=True)
        p = smbcacls(stack, cacls_host, share, work.rel(name), '--set',
                     _nodefault_acl(stack, work))
        assert p.returncode == 0, p.stdout
        got[share] = (had, work.facl(share, name, default=True),
                      show_acl(stack, cacls_host, share, work.rel(name)))
    had, has, shown = got['glusterfs2']
    assert 'default:user:%d:r-x' % work.u2.pw_uid in had, had
    assert has == []
    assert not any('/OI' in l or '/CI' in l for l in shown), shown
    assert got['glusterfs2'] == got['local']


# ------------------------------------ the stock module, for the record

def test_stock_directory_shows_inheritable_entries_from_mode(stack, work,
                                                             cacls_host):
    """Samba 4.17's vfs_glusterfs answers a missing default ACL with an
    ACL built from the mode, so every directory shows CREATOR OWNER and
    CREATOR GROUP inheritable entries that local and glusterfs2 do not
    show (and the next NT ACL write turns them into a real default
    ACL)."""
    work.mkdir('glusterfs', 'stockdir', 0o750)
    settle()
    out = {s: show_acl(stack, cacls_host, s, work.rel('stockdir'))
           for s in ('glusterfs', 'glusterfs2')}
    assert any(l.startswith('ACL:Creator Owner:ALLOWED/OI|CI|IO/')
               for l in out['glusterfs']), out['glusterfs']
    assert not any('/OI' in l or '/CI' in l for l in out['glusterfs2']), \
        out['glusterfs2']


def test_stock_dacl_without_inheritable_entries_fails(stack, work,
                                                      cacls_host):
    """Samba 4.17's vfs_glusterfs passes removexattr's ENODATA on from
    sys_acl_delete_def_fd: a DACL without inheritable entries on a
    directory without a default ACL fails with NT_STATUS_NOT_FOUND, after
    the access ACL was written.  (glusterfs2 and local succeed:
    test_dacl_without_inheritable_entries_on_directory.)"""
    work.mkdir('glusterfs', 'stocknodefault', 0o700)
    settle()
    p = smbcacls(stack, cacls_host, 'glusterfs', work.rel('stocknodefault'),
                 '--set', _nodefault_acl(stack, work))
    assert p.returncode != 0
    assert 'NT_STATUS_NOT_FOUND' in p.stdout, p.stdout
    assert 'user:%d:r-x' % work.u2.pw_uid in work.facl('glusterfs',
                                                        'stocknodefault')
