"""What the results record of the machine and the software: versions,
the git revision, the module (and the baseline module) installed."""

import datetime
import hashlib
import os
import platform
import re
import socket
import subprocess

from .common import TOP
from .stack import gfapi_exec, gluster_cmd, platform_root

# what test/bench/baseline records of the module it installed
BASELINE_INFO = os.path.join(TOP, '.stack', 'baseline')


def versions(env=None):
    """The machine and the software of the stack's env (on a platform:
    its own Samba, GlusterFS, fio and OS, the kernel and the machine
    being this one's)."""
    env = env or {}
    root = platform_root(env)
    def first(cmd, pat):
        try:
            out = subprocess.run(cmd, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT,
                                 universal_newlines=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            return '?'
        m = re.search(pat, out)
        return m.group(1) if m else '?'
    osname = '?'
    try:
        with open(root + '/etc/os-release') as f:
            m = re.search(r'PRETTY_NAME="([^"]*)"', f.read())
            osname = m.group(1) if m else '?'
    except OSError:
        pass
    mem = 0
    with open('/proc/meminfo') as f:
        m = re.search(r'MemTotal:\s+(\d+)', f.read())
        mem = int(m.group(1)) / 1024.0 / 1024.0 if m else 0
    git = first(['git', '-C', TOP, 'rev-parse', '--short', 'HEAD'],
                r'(\S+)')
    try:
        dirty = subprocess.run(
            ['git', '-C', TOP, 'status', '--porcelain', '--', 'source',
             'include', 'wscript'], stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, universal_newlines=True,
            timeout=30).stdout.strip()
        if dirty:
            git += ' (module sources modified)'
    except (OSError, subprocess.TimeoutExpired):
        pass
    module = '?'
    mod = os.environ.get('GLUSTERFS2_MODULE') or ''
    state = os.environ.get('GLUSTERFS2_MODULE_STATE') or '?'
    if os.path.exists(mod):
        module = module_desc(mod)
        if state != 'ok':
            module += ' (test/stack: %s against the sources)' % state
    return {
        'baseline': baseline(),
        'platform': env.get('PLATFORM') or None,
        'samba': env.get('PLATFORM_SAMBA') if root else
        first(['smbd', '-V'], r'Version\s+(\S+)'),
        'gluster': first(gluster_cmd(env) + ['--version'],
                         r'glusterfs\s+(\S+)'),
        'fio': first(gfapi_exec(env) + ['fio', '--version'], r'(\S+)'),
        'os': osname, 'kernel': platform.release(),
        'cores': os.cpu_count(), 'mem_gib': round(mem),
        'host': socket.gethostname(), 'git': git, 'module': module,
    }


def sha256(path):
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


def module_desc(path):
    return '%s, sha256 %s, built %s' % (
        path, sha256(path)[:12], datetime.datetime.utcfromtimestamp(
            os.path.getmtime(path)).strftime('%Y-%m-%d %H:%M UTC'))


def baseline():
    """The module of the stack's glusterfs2-base share (test/stack up
    --baseline-module NAME), and the git revision it was built from when
    test/bench/baseline of this checkout installed it; None without a
    baseline share.  From the environment main() sets (BASELINE_MODULE,
    GLUSTERFS2_MODULE of test/stack env)."""
    name = os.environ.get('BASELINE_MODULE') or ''
    mod = os.environ.get('GLUSTERFS2_MODULE') or ''
    if not name or not mod:
        return None
    path = os.path.join(os.path.dirname(mod), name + '.so')
    if not os.path.exists(path):
        return 'vfs objects = %s, but %s is missing' % (name, path)
    desc = 'vfs objects = %s, module %s' % (name, module_desc(path))
    info = {}
    try:
        with open(BASELINE_INFO) as f:
            for line in f:
                k, sep, v = line.rstrip('\n').partition('=')
                if sep:
                    info[k] = v
    except OSError:
        pass
    if info.get('SHA256') == sha256(path) and info.get('COMMIT'):
        desc += ', built by test/bench/baseline from git %s (%s)' % (
            info['COMMIT'][:12], info.get('REV', '?'))
    else:
        desc += ' (git revision unknown: not the build test/bench/' \
            'baseline of this checkout installed last)'
    return desc
