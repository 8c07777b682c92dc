"""The benchmark's files on the volume and the local share (made once,
checked and reused), the brick daemons (their descriptors, a restart
between runs when the stock module's leak fills them) and the page
cache (warm, drop)."""

import os
import shutil
import subprocess
import tempfile
import time

from .common import (ALL_SMB_SHARES, DATADIR, LR_SEED, PW_SEED, TOP, MiB,
                     human_size, now, size_tag)
from .stack import gluster_cmd, inside, platform_root, runs_in


def smb2q_pattern(seed):
    """test/tools/smb2q.py's data pattern (its Pattern class)"""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        'smb2q', os.path.join(TOP, 'test', 'tools', 'smb2q.py'))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.Pattern(seed)


def inside_path(bench, path):
    """A brick directory as the bricks' own host names it (without the
    platform's root in front)."""
    root = platform_root({'PLATFORM_ROOT': getattr(bench, 'proot', '')})
    if root and path.startswith(root + '/'):
        return path[len(root):]
    return path


class Data:
    """Mixin of Bench: the data set, the bricks, the cache state."""

    def roots(self):
        """share-side root of DATADIR, as local paths"""
        return {'local': os.path.join(self.local, DATADIR),
                'volume': os.path.join(self.fuse, DATADIR)}

    def backend_root(self, backend):
        r = self.roots()
        return r['local'] if backend == 'local' else r['volume']

    def brick_label(self, path):
        """Which bricks hold path, from its trusted.glusterfs.pathinfo
        through the FUSE mount: 'b1', or 'b1+b2+b3' for a replica set
        (the bricks numbered as in BRICK_DIRS); None if not known."""
        try:
            info = os.getxattr(path, 'trusted.glusterfs.pathinfo')
        except OSError:
            return None
        info = info.decode('utf-8', 'replace')
        held = ['b%d' % (i + 1) for i, b in enumerate(self.bricks)
                if '%s/' % inside_path(self, b) in info]
        return '+'.join(held) or None

    def brick_names(self, d, prefix):
        """[(brick label, name)]: one name per brick (per replica set) of
        the volume for a new file in directory d (a FUSE path), in the
        order of BRICK_DIRS.  DHT hashes a name within its directory's
        layout, so a name is chosen by creating it through the FUSE mount,
        reading where it landed and removing it again.  Names already
        chosen for (d, prefix) are kept for the run; a name that exists
        already is not touched, only asked where it is."""
        key = (d, prefix)
        cache = self.__dict__.setdefault('_brick_names', {})
        if key in cache:
            return cache[key]
        found = {}
        for i in range(200):
            name = '%s-%03d.dat' % (prefix, i)
            path = os.path.join(d, name)
            if os.path.exists(path):
                # made by an earlier run the same way: where it is
                label = self.brick_label(path)
            else:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY,
                             0o644)
                os.close(fd)
                try:
                    label = self.brick_label(path)
                finally:
                    os.unlink(path)
            if label is not None and label not in found:
                found[label] = name
            if sum(len(k.split('+')) for k in found) >= len(self.bricks):
                break
        out = sorted(found.items(),
                     key=lambda kv: int(kv[0].split('+')[0][1:]))
        if not out:
            out = [(None, '%s.dat' % prefix)]
        cache[key] = out
        return out

    def ensure_file(self, path, size, seed):
        if os.path.exists(path):
            rc, out, _ = self.patfile('check', path, size, seed)
            if rc == 0:
                return
        self.note('creating %s (%s)' % (path, human_size(size)))
        self.patfile('make', path, size, seed)
        rc, out, _ = self.patfile('check', path, size, seed)
        if rc != 0:
            raise RuntimeError('could not create %s: %s' % (path, out))

    def ensure_set(self, d, count, fsize, seed):
        os.makedirs(d, exist_ok=True)
        rc, _, _ = self.patfile('checkset', d, count, fsize, seed)
        if rc != 0:
            self.note('creating %d files of %d bytes in %s' % (count, fsize,
                                                               d))
            self.patfile('makeset', d, count, fsize, seed)
            rc, out, _ = self.patfile('checkset', d, count, fsize, seed)
            if rc != 0:
                raise RuntimeError('could not create the files in %s: %s' %
                                   (d, out))

    def seq_name(self):
        return 'seq-%s.dat' % size_tag(self.cfg.seq_size)

    def seq_seed(self):
        return 1000 + self.cfg.seq_size // MiB

    def mc_prefix(self):
        return 'mc-%s-' % size_tag(self.cfg.mc_size)

    def sr_dir(self):
        return 'small-%d' % self.cfg.sr_files

    def lr_name(self):
        return 'lr-%s.dat' % size_tag(self.cfg.lease_size)

    def lr_names(self, root):
        """leaseread's files under root: on the volume one per brick
        (replica set), [(label, name)] names only here"""
        if root == self.roots()['local']:
            return [self.lr_name()]
        return [n for _, n in self.lr_brick_names()]

    def lr_brick_names(self):
        """[(brick label, name)] of leaseread's files on the volume"""
        return self.brick_names(self.roots()['volume'],
                                'lr-%s' % size_tag(self.cfg.lease_size))

    def ensure_lease_file(self, path, size):
        """leaseread's file: smb2q's pattern (LR_SEED), written here;
        checked at its ends and middle when already there (smb2q checks
        every byte it reads)"""
        pat = smb2q_pattern(LR_SEED)
        probes = sorted({0, max(0, size // 2 - MiB), max(0, size - MiB)})
        try:
            if os.path.getsize(path) == size:
                with open(path, 'rb') as f:
                    for off in probes:
                        f.seek(off)
                        n = min(MiB, size - off)
                        if f.read(n) != pat.generate(off, n):
                            raise ValueError(off)
                return
        except (OSError, ValueError):
            pass
        self.note('creating %s (%s, smb2q pattern)' % (path,
                                                       human_size(size)))
        # written in place, not renamed into place: on the volume a file
        # renamed keeps its data on the brick its first name hashed to
        # (a half-written file fails the check above and is made again)
        with open(path, 'wb') as f:
            for off in range(0, size, 4 * MiB):
                f.write(pat.generate(off, min(4 * MiB, size - off)))

    def fio_name(self):
        return 'fio-%s.dat' % size_tag(self.cfg.seq_size)

    def prepare(self, workloads, backends):
        cfg = self.cfg
        t = now()
        self.say('preparing the benchmark files (reused when already there)')
        targets = []
        if any(b in ALL_SMB_SHARES and b != 'local' for b in backends):
            targets.append(self.roots()['volume'])
        if 'local' in backends:
            targets.append(self.roots()['local'])
        for root in targets:
            os.makedirs(root, exist_ok=True)
            os.chmod(root, 0o1777)
            if {'seqread', 'pipelined', 'randread'} & set(workloads):
                self.ensure_file(os.path.join(root, self.seq_name()),
                                 cfg.seq_size, self.seq_seed())
            if 'leaseread' in workloads:
                for name in self.lr_names(root):
                    self.ensure_lease_file(os.path.join(root, name),
                                           cfg.lease_size)
            if 'multiclient' in workloads:
                for i in range(cfg.mc_clients):
                    self.ensure_file(os.path.join(
                        root, '%s%02d.dat' % (self.mc_prefix(), i)),
                        cfg.mc_size, 2000 + i)
            if 'smallread' in workloads:
                self.ensure_set(os.path.join(root, self.sr_dir()),
                                cfg.sr_files, cfg.sr_size, 5000)
        if 'gfapi' in backends and {'seqread', 'randread', 'leaseread'} & \
                set(workloads):
            path = os.path.join(self.roots()['volume'], self.fio_name())
            ok = (os.path.exists(path) and
                  os.path.getsize(path) == cfg.seq_size)
            if ok:
                res = self.fio('check', 'read', 1 * MiB, 8 * MiB,
                               DATADIR + '/' + self.fio_name())
                ok = res['ok']
            if not ok:
                # through the FUSE mount, by the fio of the stack's side
                self.note('creating %s with fio (crc32c headers)' % path)
                self.run_cmd(self.gexec + [
                    'fio', '--name=prep', '--ioengine=psync',
                    '--filename=' + inside(self.env, path), '--rw=write',
                    '--bs=1m', '--size=%d' % cfg.seq_size,
                    '--verify=crc32c', '--verify_interval=4096',
                    '--do_verify=0', '--verify_state_save=0'],
                    600, check=True)
        if 'pipewrite' in workloads and \
                any(b in ALL_SMB_SHARES for b in backends):
            # the source of smbclient's put, in RAM: reading it costs the
            # client nothing the disk would add
            self.shm = tempfile.mkdtemp(prefix='gf2bench.', dir='/dev/shm')
            self.pw_src = os.path.join(self.shm, 'pw-src.dat')
            self.patfile('make', self.pw_src, cfg.pw_size, PW_SEED)
        if 'smallfiles' in workloads:
            src = os.path.join(self.tmp, 'sf-src')
            os.makedirs(src, exist_ok=True)
            self.patfile('makeset', src, cfg.sf_files, cfg.sf_size, 7000)
        subprocess.run(['sync'])
        self.say('prepared in %.0f s' % (now() - t))

    def brick_pids(self):
        """{brick dir: glusterfsd pid or None}: the brick daemons of the
        stack's own glusterd (a platform's bricks have the same paths in
        its root as this machine's stack in /: told apart by their root)"""
        root = platform_root(self.env)
        found = {b: None for b in self.bricks}
        for d in os.listdir('/proc'):
            if not d.isdigit():
                continue
            try:
                with open('/proc/%s/cmdline' % d, 'rb') as f:
                    args = f.read().decode(errors='replace').split('\0')
            except OSError:
                continue
            if not args or not args[0].endswith('glusterfsd'):
                continue
            for i, a in enumerate(args[:-1]):
                if a == '--brick-name' and root + args[i + 1] in found \
                        and runs_in(int(d), root):
                    found[root + args[i + 1]] = int(d)
        return found

    def brick_fds(self):
        """(max descriptors open in a brick, its limit, bricks down, total
        descriptors open in the bricks)"""
        most, limit, down, total = 0, 0, [], 0
        for b, pid in self.brick_pids().items():
            if pid is None:
                down.append(b)
                continue
            try:
                n = len(os.listdir('/proc/%d/fd' % pid))
                lim = 0
                with open('/proc/%d/limits' % pid) as f:
                    for line in f:
                        if line.startswith('Max open files'):
                            lim = int(line.split()[3])
            except (OSError, ValueError, IndexError):
                continue
            total += n
            if n >= most:
                most, limit = n, lim
        return most, limit, down, total

    def check_bricks(self):
        """Restart the volume (between runs, untimed) when a brick is down
        or holds more than half the descriptors it may open: the stock
        module leaks a brick descriptor per directory open until the brick
        fails opens with EMFILE, which would charge its leak to whichever
        backend runs next."""
        most, limit, down, total = self.brick_fds()
        if not down and (not limit or most < limit // 2):
            return total
        why = ('brick(s) down: %s' % ' '.join(down)) if down else \
            'a brick holds %d of %d descriptors' % (most, limit)
        self.say('restarting volume %s (%s)' % (self.volume, why))
        self.restarts.append({'run': self.nrun, 'why': why})
        g = gluster_cmd(self.env) + ['--mode=script', 'volume']
        self.run_cmd(g + ['stop', self.volume, 'force'], 180)
        self.run_cmd(g + ['start', self.volume, 'force'], 180)
        deadline = now() + 90
        while now() < deadline:
            if not self.brick_fds()[2]:
                break
            time.sleep(1)
        # let the FUSE and gfapi clients reconnect
        time.sleep(3)
        for _ in range(30):
            if os.path.isdir(self.roots()['volume']):
                break
            time.sleep(1)
        return self.brick_fds()[3]

    def warm(self, name):
        """read the file's brick copies and the local copy into the page
        cache (once after each drop_caches: 24 GiB hold the whole data set)
        """
        if name in self.warmed:
            return
        self.warmed.add(name)
        paths = [os.path.join(self.roots()['local'], name)]
        for b in self.bricks:
            paths.append(os.path.join(b, DATADIR, name))
        for p in paths:
            try:
                with open(p, 'rb', buffering=0) as f:
                    while f.read(4 * MiB):
                        pass
            except OSError:
                pass

    def drop_caches(self):
        self.warmed = set()
        subprocess.run(['sync'])
        with open('/proc/sys/vm/drop_caches', 'w') as f:
            f.write('3\n')

    def cleanup_outputs(self):
        """remove what the write workloads wrote (the read files stay for
        the next run)"""
        for root in set(self.roots().values()):
            if not os.path.isdir(root):
                continue
            for n in os.listdir(root):
                if n.startswith(('w-', 'mw-', 'sf-', 'pw-', 'lw-')):
                    p = os.path.join(root, n)
                    try:
                        if os.path.isdir(p):
                            shutil.rmtree(p)
                        else:
                            os.unlink(p)
                    except OSError:
                        pass
        shutil.rmtree(self.tmp, ignore_errors=True)
        if self.shm is not None:
            shutil.rmtree(self.shm, ignore_errors=True)
