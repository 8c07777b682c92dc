"""What the tests of the Debian package and of foreign module builds
share: a command runner, the newest time of a build's inputs, smbd's
modules directory, and PackageRoot, a
mount namespace whose /usr and /var are overlays of the machine's, so
that what dpkg installs or a test copies into MODULESDIR there is never
seen by the machine's smbds (test_package.py, test_samba_release_guard.py).
"""

import os
import re
import shutil
import subprocess
import time


def run(cmd, timeout=300, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True,
                          errors='replace', timeout=timeout, **kw)


def newest_mtime(top, names, prune_dirs=(), skip_file=None):
    """The newest modification time of the files under top/NAME for each
    of names (files or folders), leaving out folders named in prune_dirs
    and the files skip_file(root, name) is true for: whether a build made
    from them is stale."""
    newest = 0.0
    for name in names:
        path = os.path.join(top, name)
        if os.path.isfile(path):
            newest = max(newest, os.path.getmtime(path))
            continue
        for root, dirs, files in os.walk(path):
            dirs[:] = [d for d in dirs if d not in prune_dirs]
            for f in files:
                if skip_file is not None and skip_file(root, f):
                    continue
                newest = max(newest, os.path.getmtime(os.path.join(root, f)))
    return newest


def modulesdir():
    out = run(['smbd', '-b']).stdout
    m = re.search(r'MODULESDIR:\s*(\S+)', out)
    assert m, 'smbd -b prints no MODULESDIR'
    return m.group(1)


class PackageRoot:
    """A mount namespace of its own whose /usr and /var are overlays of
    the machine's (their upper layers in DIR): what dpkg does there, the
    machine never sees.  Its first process is a `sleep` started by
    `unshare --mount`; commands enter it with nsenter (cmd), files are
    reached from outside through /proc/PID/root (path), and it goes when
    its last process ends (close)."""

    OVERLAID = ('/usr', '/var')

    def __init__(self, d):
        self.dir = d
        self.holder = subprocess.Popen(
            ['unshare', '--mount', '--propagation', 'private', '--',
             'sleep', 'infinity'])
        try:
            self._setup()
        except BaseException:
            self.close()
            raise

    def _setup(self):
        ours = os.readlink('/proc/self/ns/mnt')
        deadline = time.time() + 10
        while True:
            try:
                if os.readlink('/proc/%d/ns/mnt' % self.holder.pid) != \
                        ours:
                    break
            except OSError:
                pass
            assert self.holder.poll() is None and time.time() < deadline, \
                'unshare --mount did not start a mount namespace'
            time.sleep(0.05)
        for i, lower in enumerate(self.OVERLAID):
            upper = os.path.join(self.dir, 'upper%d' % i)
            work = os.path.join(self.dir, 'work%d' % i)
            os.makedirs(upper)
            os.makedirs(work)
            p = run(self.cmd('mount', '-t', 'overlay', 'overlay', '-o',
                             'lowerdir=%s,upperdir=%s,workdir=%s' % (
                                 lower, upper, work), lower))
            assert p.returncode == 0, 'overlay on %s: %s' % (lower, p.stdout)

    def cmd(self, *args):
        # -r -w: the holder's root and working directory, which inside a
        # platform's chroot are not the namespace's own "/"
        return ['nsenter', '-t', str(self.holder.pid), '-m', '-r', '-w',
                '--'] + list(args)

    def run(self, *args, timeout=300):
        return run(self.cmd(*args), timeout=timeout)

    def path(self, p):
        return '/proc/%d/root%s' % (self.holder.pid, p)

    def close(self):
        if self.holder.poll() is None:
            self.holder.kill()
        self.holder.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
