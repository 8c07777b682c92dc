"""A private smbd for the tests that serve a configuration of their own.

The smbd listens on 127.0.0.1 only, on its own port, with its own
smb.conf, lock, state, cache, pid, ncalrpc and log directories under
.stack/NAME/, and copies of the stack's passdb and secrets (so the stack's
users log in with their passwords; the same way test/asan/run does it).
It never touches the stack's smbd, glusterd or volume settings.

    srv = PrivateSmbd('examples', stack_env)    # port: see PORT_SLOTS
    srv.write_conf(global_items, {'share': items})
    srv.start()
    ... srv.smbclient('share', 'put a b') ...
    srv.stop()

Sanitizer mode (the stack brought up with `test/stack up --asan`, which
`test/stack env` shows as SANITIZE=address,undefined): every share's
`vfs objects` entry glusterfs2 becomes VFS_MODULE (glusterfs2_asan, or
NAME_asan for a stack with GF2_STACK_MODULE=NAME: the module built with
ASan and UBSan), and smbd runs with libasan preloaded,
its processes writing their reports to ASAN_REPORTS as
{asan,ubsan}.NAME.PID, where `test/run-all --asan` classifies them with
the stack's.  Timeouts for starting and stopping are tripled.
"""

import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

# Ports.  A private smbd listens on the stack's SMB_PORT plus an offset of
# its own, so that the tests of two stacks on one machine (each with its
# GF2_STACK_PORT) never meet on a port, and no two private smbds of one
# stack share one: an smbd left behind by an interrupted run blocks only
# its own test, which stops it before it starts again.  The offsets are
# given out here, once each, keyed by the private smbd's name (also its
# directory .stack/NAME/): PORT_STEP times its slot.  Stacks side by side
# sit a few ports apart (4450, 4600, 4610, ...): with offsets of whole
# thousands their private smbds never meet unless two stacks' ports are a
# multiple of PORT_STEP apart, and the ports stay below Linux's ephemeral
# range (32768) for stack ports up to about 12000.
PORT_STEP = 1000
PORT_SLOTS = {
    'two-volumes': 1,           # test_metadata_cache.py, test_prefetch.py
    'xattr-batch-log': 2,       # test_metadata_cache.py
    'asan': 3,                  # test/asan/run (test_asan.py)
    'examples': 4,              # test_examples.py
    'pkg': 5,                   # test_package.py, and
                                # test_samba_release_guard.py's
                                # smbd (.stack/guard) after it
    'badoptions': 6,            # test_bad_options.py
    'posixlocks': 7,            # test_posix_locks.py
    'profile': 8,               # test_profile.py
    'fault': 9,                 # test_faults.py
    'coherence': 10,            # test_metadata_coherence.py
    'coherence-up': 11,         # test_metadata_coherence.py, upcalls
    'transport': 12,            # test_write_spin.py
    'lockdefault': 13,          # test_lock_default.py
    'copychunkclose': 14,       # test_copychunk_close.py
    'identasync': 15,           # test_identity_async.py and
                                # test_write_cache_identity.py
    'shadowmp': 16,             # test_shadow_mountpoint.py
    'symlinkswap': 17,          # test_symlink_swap.py
    'budget-mixed': 18,         # test_budget_mixed.py
    'lockcache': 19,            # test/bench/lockcache
    'metaprof': 20,             # test/bench/metaprof
    'asan-shutdown': 21,        # test/asan/shutdown (test_asan_shutdown.py)
    'prometheus': 22,           # test_prometheus.py, its smbd
    'prometheus-exporter': 23,  # test_prometheus.py, node_exporter
    'hooks': 24,                # test_volume_hooks.py
    'shareroot': 25,            # test_share_root.py
    'copychunkident': 26,       # test_copychunk_identity.py
    'searchperm': 27,           # test_search_permission.py
    'wcache-wait': 28,          # test_write_cache.py (three fixtures,
                                # one at a time)
    # test_shared_read_cache.py: SMB_PORT + PORT_STEP // 2 (slot 29
    # would be in the ephemeral range for the stack ports in use)
}
assert len(set(PORT_SLOTS.values())) == len(PORT_SLOTS), \
    'two private smbds share a port slot'
assert all(s > 0 for s in PORT_SLOTS.values())


def private_port(env, name, override=None):
    """The port of the private smbd NAME beside the stack whose `test/stack
    env` is env: SMB_PORT + PORT_STEP * PORT_SLOTS[NAME], or the number in
    the environment variable `override` when that is set."""
    if override and os.environ.get(override):
        return int(os.environ[override])
    if name not in PORT_SLOTS:
        raise KeyError('private smbd %r has no port slot: give it one in '
                       'gf2_private_smbd.PORT_SLOTS' % name)
    port = int(env['SMB_PORT']) + PORT_STEP * PORT_SLOTS[name]
    if port >= 32768:
        raise ValueError('private smbd %r: port %d is in the ephemeral '
                         'range; use a lower GF2_STACK_PORT' % (name, port))
    return port


# Helper processes smbd forks that serve no client connection.
HELPER_COMMS = ('smbd-notifyd', 'cleanupd', 'smbd-scavenger',
                'smbd-echo', 'notifyd', 'smbd-cleanupd', 'samba-dcerpcd')

DIR_KEYS = ('private dir', 'lock directory', 'state directory',
            'cache directory', 'pid directory', 'ncalrpc dir')

# [global] keys the private smbd sets itself: where it listens, where it
# keeps its state, who its users are.  An example's value for one of
# these is replaced.
PLUMBING_KEYS = set(DIR_KEYS) | {
    'smb ports', 'interfaces', 'bind interfaces only', 'disable netbios',
    'passdb backend', 'log file', 'max log size', 'log level',
    'workgroup', 'netbios name', 'load printers', 'printing',
    'printcap name', 'disable spoolss', 'usershare max shares',
    'clustering', 'include'}


def parse_smb_conf(path):
    """[(section, [(key, value)])] in file order; comments dropped, keys
    lower-cased and with single spaces (as smb.conf compares them)."""
    sections = []
    cur = None
    with open(path) as f:
        for line in f:
            s = line.strip()
            if not s or s[0] in '#;':
                continue
            m = re.match(r'^\[(.+)\]$', s)
            if m:
                cur = (m.group(1), [])
                sections.append(cur)
                continue
            if cur is not None and '=' in s:
                k, v = s.split('=', 1)
                cur[1].append((' '.join(k.lower().split()), v.strip()))
    return sections


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def copy_tdb(src, dst):
    """A copy of a tdb the stack's smbd has open, read through tdb (under
    its locks), written to a new file (test/asan/run's copy_tdb)."""
    tmp = dst + '.tmp'
    if os.path.exists(tmp):
        os.unlink(tmp)
    try:
        import tdb
    except ImportError:         # python3-tdb missing: a plain copy
        shutil.copyfile(src, tmp)
        os.chmod(tmp, 0o600)
        os.rename(tmp, dst)
        return
    s = tdb.Tdb(src, 0, tdb.DEFAULT, os.O_RDONLY)
    d = tdb.Tdb(tmp, 0, tdb.DEFAULT, os.O_RDWR | os.O_CREAT, 0o600)
    for k in s.keys():
        d[k] = s[k]
    d.close()
    s.close()
    os.rename(tmp, dst)


def port_free(port):
    try:
        with socket.create_connection(('127.0.0.1', port), 1):
            return False
    except OSError:
        pass
    # nothing answers; make sure nothing is bound either
    s = socket.socket()
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(('127.0.0.1', port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def proc_info(pid):
    """(ppid, comm, cmdline) of a live process, or None."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            stat = f.read()
        with open('/proc/%d/cmdline' % pid, 'rb') as f:
            cmd = f.read().replace(b'\0', b' ').decode('utf-8', 'replace')
    except OSError:
        return None
    comm = stat[stat.index('(') + 1:stat.rindex(')')]
    rest = stat[stat.rindex(')') + 2:].split()
    if rest[0] == 'Z':
        return None
    return int(rest[1]), comm, cmd


def _lock_directory(conf):
    """The `lock directory` of smb.conf CONF, or None."""
    try:
        for name, items in parse_smb_conf(conf):
            if name == 'global':
                return dict(items).get('lock directory')
    except OSError:
        pass
    return None


def _holds_file_under(pid, directory):
    """Whether process PID has a file under DIRECTORY open."""
    fds = '/proc/%d/fd' % pid
    try:
        names = os.listdir(fds)
    except OSError:
        return False
    for fd in names:
        try:
            target = os.readlink(os.path.join(fds, fd))
        except OSError:
            continue
        if target.startswith(directory):
            return True
    return False


def smbd_processes(conf):
    """Every live process of the smbd started with `-s CONF`: those with
    that on the command line, their descendants, and the smbd processes
    that hold a file of its lock directory open.

    Up to Samba 4.17 forked children keep the parent's command line;
    later releases retitle them ("smbd: client [...]"), so a child is
    found as a descendant of the main smbd only while that one lives.
    The main smbd does not wait for its children when it stops (it
    signals them and exits), so children still leaving (a glfs_fini takes
    seconds) are the init process's by then, and would be lost from
    view: they are found by the tdbs of the lock directory, which every
    smbd process keeps open to its end.  An smbd started on the same lock
    directory while they run truncates its volatile tdbs
    (TDB_CLEAR_IF_FIRST: forked children do not hold the active lock that
    would prevent it, the long-lived parent does), and a child still
    using one then faults reading its mapping (SIGBUS)."""
    infos = {}
    for d in os.listdir('/proc'):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        info = proc_info(int(d))
        if info:
            infos[int(d)] = info
    ours = set(pid for pid, info in infos.items()
               if (' -s %s ' % conf) in info[2] + ' ')
    lock_dir = _lock_directory(conf)
    if lock_dir:
        lock_dir = os.path.join(os.path.realpath(lock_dir), '')
        ours |= set(pid for pid, info in infos.items()
                    if pid not in ours and
                    info[1].startswith(('smbd', 'samba', 'rpcd')) and
                    _holds_file_under(pid, lock_dir))
    grew = True
    while grew:
        kids = set(pid for pid, info in infos.items()
                   if info[0] in ours) - ours
        grew = bool(kids)
        ours |= kids
    return sorted(ours)


def samba_version():
    """(major, minor) of the installed smbd."""
    p = subprocess.run(['smbd', '-V'], stdout=subprocess.PIPE,
                       universal_newlines=True, check=True)
    m = re.search(r'Version (\d+)\.(\d+)', p.stdout)
    assert m, p.stdout
    return int(m.group(1)), int(m.group(2))


class PrivateSmbd:
    def __init__(self, name, env, port=None):
        """port: by default private_port(env, name)."""
        self.name = name
        self.env = env
        self.dir = os.path.join(TOP, '.stack', name)
        self.conf = os.path.join(self.dir, 'smb.conf')
        self.port = port if port is not None else private_port(env, name)
        self.proc = None
        # A command smbd is started under, which must exec it (so that the
        # process started is smbd's main process): test_package.py's
        # nsenter into a mount namespace of its own.
        self.wrap = []
        os.makedirs(self.dir, exist_ok=True)
        # sanitizer mode of the stack (test/stack up --asan)
        self.sanitize = bool(env.get('SANITIZE'))
        self.module = env.get('VFS_MODULE') or 'glusterfs2'

    # ------------------------------------------------------------ config

    def stack_global(self):
        """The stack's [global] as a dict."""
        for name, items in parse_smb_conf(self.env['SMB_CONF']):
            if name == 'global':
                return dict(items)
        return {}

    def plumbing(self):
        """The [global] settings of the private smbd itself."""
        g = self.stack_global()
        items = [
            # the stack's names: its secrets.tdb holds the machine SID
            # under them, and the passdb's users belong to that SID
            ('workgroup', g.get('workgroup', 'WORKGROUP')),
            ('netbios name', g.get('netbios name', 'GF2STACK')),
            ('smb ports', str(self.port)),
            ('interfaces', 'lo'),
            ('bind interfaces only', 'yes'),
            ('disable netbios', 'yes'),
            ('passdb backend', 'tdbsam'),
            ('log file', os.path.join(self.dir, 'log.%m')),
            ('max log size', '0'),
            ('log level', '1'),
            ('load printers', 'no'),
            ('printing', 'bsd'),
            ('printcap name', '/dev/null'),
            ('disable spoolss', 'yes'),
            ('usershare max shares', '0'),
        ]
        for k in DIR_KEYS:
            items.append((k, os.path.join(self.dir, k.split()[0])))
        return items

    def adapt_share(self, items):
        """An example share's settings pointed at the stack's volume and
        servers, with the gfapi log in this smbd's directory."""
        out = []
        for k, v in items:
            if k == 'glusterfs2:volume':
                v = self.env['GLUSTER_VOLUME']
            elif k == 'glusterfs2:volfile_server':
                v = self.env.get('GLUSTER_HOST', 'localhost')
            elif k == 'glusterfs2:logfile':
                v = os.path.join(self.dir, 'glusterfs2-%M.log')
            out.append((k, v))
        return out

    def gf2_share(self, extra=(), vol=None, path='/', vfs='glusterfs2',
                  logfile='glusterfs2-%M.log'):
        """The items of a share of the module (vfs: the `vfs objects`) on
        the stack's volume, or vol, at path on the volume: gfapi's log
        file in this smbd's directory (logfile None: the default), no
        kernel share modes, writable; extra appended."""
        items = [('vfs objects', vfs), ('path', path),
                 ('glusterfs2:volume', vol or self.env['GLUSTER_VOLUME']),
                 ('glusterfs2:volfile_server',
                  self.env.get('GLUSTER_HOST', 'localhost'))]
        if logfile:
            items.append(('glusterfs2:logfile',
                          os.path.join(self.dir, logfile)))
        return items + [('kernel share modes', 'no'),
                        ('read only', 'no')] + list(extra)

    def write_conf(self, global_items, shares, header=''):
        """global_items: [(key, value)] of an example's [global] (the
        plumbing keys are replaced by the private smbd's); shares:
        [(name, [(key, value)])]."""
        lines = ['# Generated by %s for each run: do not edit.' %
                 os.path.relpath(__file__, TOP)]
        if header:
            lines += ['# ' + l for l in header.splitlines()]
        lines.append('[global]')
        for k, v in self.plumbing():
            lines.append('\t%s = %s' % (k, v))
        for k, v in global_items:
            if k not in PLUMBING_KEYS:
                lines.append('\t%s = %s' % (k, self.vfs_value(k, v)))
        for name, items in shares:
            lines += ['', '[%s]' % name]
            for k, v in items:
                lines.append('\t%s = %s' % (k, self.vfs_value(k, v)))
        with open(self.conf, 'w') as f:
            f.write('\n'.join(lines) + '\n')
        self.make_dirs()
        return self.conf

    def vfs_value(self, key, value):
        """`vfs objects` with glusterfs2 replaced by the stack's module
        (the sanitizer build in sanitizer mode)."""
        if key != 'vfs objects' or self.module == 'glusterfs2':
            return value
        return ' '.join(self.module if x == 'glusterfs2' else x
                        for x in value.split())

    def smbd_env(self):
        """smbd's environment: in sanitizer mode libasan preloaded and
        the reports going to the stack's ASAN_REPORTS."""
        if not self.sanitize:
            return None
        sys.path.insert(0, os.path.join(TOP, 'test', 'asan'))
        import sanitizers
        lib = sanitizers.libasan_path()
        if not lib:
            raise RuntimeError('sanitizer mode: libasan not found')
        reports = self.env['ASAN_REPORTS']
        os.makedirs(reports, exist_ok=True)
        os.chmod(reports, 0o1777)
        return sanitizers.sanitizer_env(lib, reports, self.name)

    def make_dirs(self):
        for k in DIR_KEYS:
            os.makedirs(os.path.join(self.dir, k.split()[0]), exist_ok=True)
        os.chmod(os.path.join(self.dir, 'private'), 0o700)

    # ------------------------------------------------------------ process

    def our_processes(self):
        """Every live process of this private smbd (smbd_processes)."""
        return smbd_processes(self.conf)

    def client_children(self):
        """smbd children serving a client connection."""
        if self.proc is None:
            return []
        kids = []
        for pid in self.our_processes():
            info = proc_info(pid)
            if info and info[0] == self.proc.pid and \
                    info[1] not in HELPER_COMMS:
                kids.append(pid)
        return kids

    def stop_leftover(self):
        """A private smbd of this name left by an interrupted run."""
        pids = self.our_processes()
        if not pids:
            return
        pidfile = os.path.join(self.dir, 'pid', 'smbd.pid')
        try:
            with open(pidfile) as f:
                main = int(f.read().split()[0])
            if main in pids:
                os.kill(main, signal.SIGTERM)
        except (OSError, ValueError):
            pass
        self._wait_gone(60)

    def _wait_gone(self, timeout):
        if self.sanitize:
            timeout = max(timeout, 180)
        deadline = time.time() + timeout
        while time.time() < deadline and self.our_processes():
            time.sleep(0.3)
        for pid in self.our_processes():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def start(self, timeout=30):
        if self.sanitize:
            timeout *= 3
        self.stop_leftover()
        self.make_dirs()
        for p in os.listdir(self.dir):
            if p.startswith(('log.', 'glusterfs2-')) or p == 'smbd.out':
                os.unlink(os.path.join(self.dir, p))
        stack_private = os.path.join(self.env['SMB_LOGDIR'], 'private')
        for t in ('passdb.tdb', 'secrets.tdb'):
            copy_tdb(os.path.join(stack_private, t),
                     os.path.join(self.dir, 'private', t))
        if not port_free(self.port):
            raise RuntimeError('port %d is in use' % self.port)
        out = open(os.path.join(self.dir, 'smbd.out'), 'w')
        # Its own session: on SIGTERM the smbd parent signals its whole
        # process group.
        self.proc = subprocess.Popen(
            self.wrap + ['smbd', '--foreground', '--no-process-group', '-s',
                         self.conf],
            stdout=out, stderr=subprocess.STDOUT, cwd=self.dir,
            env=self.smbd_env(), start_new_session=True)
        out.close()
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                with socket.create_connection(('127.0.0.1', self.port), 1):
                    return
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError('private smbd did not listen on 127.0.0.1:%d; '
                           'see %s' % (self.port, self.dir))

    def stop(self, timeout=60):
        """SIGTERM to the main smbd; wait for every one of its processes
        (children finish their glfs_fini first, ~10 s)."""
        if self.sanitize:
            timeout *= 3
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self._wait_gone(timeout)
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()

    # ------------------------------------------------------------ clients

    def smbclient(self, share, cmds, timeout=300, user=None, password=None):
        cmd = ['smbclient', '-p', str(self.port), '//127.0.0.1/%s' % share,
               '-U', '%s%%%s' % (user or self.env['SMB_USER'],
                                 password or self.env['SMB_PASS']),
               '-c', cmds]
        return subprocess.run(cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT,
                              universal_newlines=True, errors='replace',
                              timeout=timeout)

    def check_read_back(self, back, data, out, volume_path=None):
        """Assert that the file smbclient got (back) holds data; on a
        mismatch say how (sizes, the first differing offset), what
        smbclient printed (its `get` names the size it was told at open)
        and, given volume_path (the file through the FUSE mount or on a
        brick), the size Gluster holds now: a short copy with the right
        size on the volume is a stale size at open, a short one on the
        volume too a lost write."""
        got = back.read_bytes() if back.exists() else None
        if got == data:
            return
        why = ['read back %s bytes, %d written' % (
            'no' if got is None else len(got), len(data))]
        if got is not None:
            n = min(len(got), len(data))
            first = next((i for i in range(0, n, 4096)
                          if got[i:i + 4096] != data[i:i + 4096]), None)
            if first is not None:
                while got[first] == data[first]:
                    first += 1
                why.append('first difference at offset %d' % first)
            else:
                why.append('the common %d bytes are equal' % n)
        if volume_path is not None:
            try:
                why.append('size on the volume now: %d (%s)' % (
                    os.stat(volume_path).st_size, volume_path))
            except OSError as e:
                why.append('on the volume: %s' % e)
        raise AssertionError('; '.join(why) + '\nsmbclient:\n' + out +
                             '\n' + self.logs())

    def client_env(self):
        """The stack's env pointed at this smbd: its address, port and
        smb.conf (for conftest.Smb, gf2_smb2.Client and the like)."""
        env = dict(self.env)
        env['SMB_HOST'] = '127.0.0.1'
        env['SMB_PORT'] = str(self.port)
        env['SMB_CONF'] = self.conf
        return env

    def serving(self):
        """A generator for a fixture: this smbd started, client_env()
        yielded, and the smbd stopped afterwards."""
        self.start()
        try:
            yield self.client_env()
        finally:
            self.stop()

    def logs(self, tail=3000):
        """The private smbd's logs, for failure messages."""
        text = []
        for p in sorted(os.listdir(self.dir)):
            if p.startswith('log.') or p == 'smbd.out':
                with open(os.path.join(self.dir, p), errors='replace') as f:
                    text.append('==> %s <==\n%s' % (p, f.read()[-tail:]))
        return '\n'.join(text)
