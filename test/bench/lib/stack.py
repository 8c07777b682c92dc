"""What the benchmark takes from the stack (test/stack env, the main
smbd) and the Gluster option group it may apply to the stack's volume
for a run (--volume-group).

On a platform (test/stack --platform NAME: a Debian root of its own in a
network namespace of its own, chrooted, in this machine's mount and
process namespaces) the stack's paths are host paths under PLATFORM_ROOT,
its processes run from files under it, and its gluster CLI, like every
program that is a gfapi client (fio, mdfloor), runs through EXEC: in the
platform, with the platform's libgfapi, against its glusterd.  A path
inside the platform is the host path without PLATFORM_ROOT in front (the
checkout is at the same path in the root, its build/ the platform's
own)."""

import os
import re
import shlex
import subprocess

from .common import TOP, die_args


def stack_env(platform=None):
    cmd = [os.path.join(TOP, 'test', 'stack'), 'env']
    if platform:
        cmd += ['--platform', platform]
    try:
        p = subprocess.run(cmd,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        die_args('cannot run test/stack env: %s' % e)
    if p.returncode != 0:
        die_args('the stack is not up (%s): run test/stack up%s' %
                 (p.stderr.strip() or 'test/stack env failed',
                  ' --platform ' + platform if platform else ''))
    env = {}
    for line in p.stdout.splitlines():
        if '=' in line:
            k, v = line.split('=', 1)
            v = v.strip()
            if len(v) >= 2 and v[0] == v[-1] and v[0] in '\'"':
                v = v[1:-1]
            env[k] = v
    for k in ('SMB_HOST', 'SMB_PORT', 'SMB_USER', 'SMB_PASS',
              'GLUSTER_VOLUME', 'FUSE_MOUNT', 'LOCAL_DIR', 'BRICK_DIRS'):
        if not env.get(k):
            die_args('test/stack env does not give %s' % k)
    if platform and not (env.get('PLATFORM_ROOT') and env.get('EXEC')):
        die_args('test/stack env --platform %s gives no PLATFORM_ROOT or '
                 'EXEC' % platform)
    return env


def platform_root(env):
    """The directory the stack's processes are chrooted to ('' here)."""
    return env.get('PLATFORM_ROOT', '').rstrip('/')


def gfapi_exec(env):
    """The command prefix that runs a program where the stack's gluster
    lives ([] here; on a platform its EXEC: its namespaces, its root and
    its libraries, this checkout at the same path; with `test/stack up
    --rtt MS` RTT_EXEC: the head's network namespace, so that raw gfapi
    (fio, mdfloor) takes the same round trip to the bricks as smbd; on a
    platform up with --rtt, its RTT_EXEC is EXEC followed by the head's
    namespace there)."""
    if env.get('RTT_EXEC'):
        return shlex.split(env['RTT_EXEC'])
    if platform_root(env):
        return shlex.split(env['EXEC'])
    return []


def inside(env, path):
    """A host path as the stack's side sees it (on a platform: within its
    root)."""
    root = platform_root(env)
    if root and (path == root or path.startswith(root + '/')):
        return path[len(root):] or '/'
    return path


def gluster_cmd(env):
    """The gluster CLI of the stack's own glusterd, as a command prefix."""
    return gfapi_exec(env) + ['gluster']


def runs_in(pid, root):
    """Does process pid run chrooted to root ('': not chrooted)?"""
    try:
        return os.readlink('/proc/%d/root' % pid).rstrip('/') == root
    except OSError:
        return False


def smbd_main_pid(env):
    rundir = os.path.join(env.get('SMB_LOGDIR', ''), 'run')
    try:
        names = os.listdir(rundir)
    except OSError:
        return None
    for n in names:
        if n.startswith('smbd') and n.endswith('.pid'):
            try:
                with open(os.path.join(rundir, n)) as f:
                    pid = int(f.read().split()[0])
                if os.readlink('/proc/%d/exe' % pid) == \
                        platform_root(env) + '/usr/sbin/smbd':
                    return pid
            except (OSError, ValueError, IndexError):
                continue
    return None


GROUPS_DIR = '/var/lib/glusterd/groups'



def gluster_cli(*args):
    p = subprocess.run(['gluster', '--mode=script'] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=120)
    return p.returncode, p.stdout


class VolumeGroup:
    """An option group applied to a volume for the length of a run.

    The options the group sets are read from its file; those the volume
    had set explicitly before (volume info, "Options Reconfigured") get
    their old values back, the others are reset to gluster's default."""

    def __init__(self, volume, group):
        self.volume = volume
        self.group = group
        path = os.path.join(GROUPS_DIR, group)
        if not re.fullmatch(r'[A-Za-z0-9_.-]+', group) or \
                not os.path.isfile(path):
            die_args('--volume-group: no option group \'%s\' (known: %s)'
                     % (group, ', '.join(sorted(os.listdir(GROUPS_DIR)))
                        if os.path.isdir(GROUPS_DIR) else GROUPS_DIR +
                        ' is missing'))
        self.options = {}
        with open(path) as f:
            for line in f:
                k, sep, v = line.strip().partition('=')
                if sep and k:
                    self.options[k] = v
        self.before = {}
        self.applied = False

    def apply(self):
        rc, out = gluster_cli('volume', 'info', self.volume)
        if rc != 0:
            die_args('--volume-group: volume info %s: %s' % (
                self.volume, out.strip()[-200:]))
        for line in out.splitlines():
            k, sep, v = line.partition(': ')
            if sep and k.strip() in self.options:
                self.before[k.strip()] = v.strip()
        rc, out = gluster_cli('volume', 'set', self.volume, 'group',
                              self.group)
        if rc != 0:
            die_args('--volume-group: volume set %s group %s: %s' % (
                self.volume, self.group, out.strip()[-200:]))
        self.applied = True

    def restore(self):
        if not self.applied:
            return []
        errs = []
        for k in self.options:
            if k in self.before:
                rc, out = gluster_cli('volume', 'set', self.volume, k,
                                      self.before[k])
            else:
                rc, out = gluster_cli('volume', 'reset', self.volume, k)
            if rc != 0:
                errs.append('%s: %s' % (k, out.strip()[-200:]))
        self.applied = False
        return errs

    def describe(self):
        return 'option group %s (%s)' % (self.group, ', '.join(
            '%s=%s' % kv for kv in self.options.items()))
