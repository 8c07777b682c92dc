"""The load generators (test/bench/*.c): built here, by the benchmark
itself, whenever one is missing or older than its sources, so that a run
needs neither a configured tree nor `test/stack up` to have built them.

They are compiled straight with cc (flags as wscript's, libraries from
pkg-config) into build/test/bench/, where `./waf build` puts the same
programs; nothing is installed.  Each is written under a temporary name
and renamed into place, so that a program another run is executing is
never overwritten.

Against a platform's stack (test/stack --platform NAME) the programs that
are gfapi clients (GFAPI_PROGRAMS) run in the platform, with its libgfapi:
they are built there too, by the platform's compiler against its headers
and libraries, into the platform's build/test/bench/ (the checkout's
build/ as the root sees it; the host's own copies stay as they are)."""

import os
import shutil
import subprocess

from .common import BIN, TOP, die_args

SRC = os.path.join(TOP, 'test', 'bench')
CFLAGS = ['-std=gnu11', '-fPIC', '-pipe', '-O2', '-g', '-Wall',
          '-Wmissing-prototypes', '-Werror=implicit-function-declaration',
          '-Werror=incompatible-pointer-types', '-Werror=return-type',
          '-Werror=format']
LDFLAGS = ['-Wl,--as-needed']

# output: (sources, the first compiled and the rest what it includes;
#          pkg-config packages; extra flags)
PROGRAMS = {
    'smbload': (['smbload.c', 'pattern.h'], ['smbclient'], []),
    'patfile': (['patfile.c', 'pattern.h'], [], []),
    'mdfloor': (['mdfloor.c'], ['glusterfs-api'], ['-pthread']),
    'leaserecall': (['leaserecall.c'], ['glusterfs-api'], []),
    # preloaded into fio: glfs_fini() stubbed out (nofini.c)
    'gf2nofini.so': (['nofini.c'], [], ['-shared']),
}

# the programs that are gfapi clients themselves, or are loaded into one
# (fio): on a platform, built and run in it
GFAPI_PROGRAMS = ('mdfloor', 'gf2nofini.so')

# the Debian package that brings each pkg-config package
DEB_PACKAGES = {'smbclient': 'libsmbclient-dev',
                'glusterfs-api': 'libglusterfs-dev'}


def stale(names=None, root=''):
    """the outputs that are missing or older than one of their sources
    (root: the platform's root, where its outputs are seen from here)"""
    out = []
    for name, (srcs, _, _) in sorted(PROGRAMS.items()):
        if names is not None and name not in names:
            continue
        prog = root + os.path.join(BIN, name)
        newest = max(os.path.getmtime(os.path.join(SRC, s)) for s in srcs)
        if not os.path.exists(prog) or os.path.getmtime(prog) < newest:
            out.append(name)
    return out


def pkg_flags(what, pkgs, prefix=()):
    """what: --cflags or --libs; prefix: where pkg-config runs"""
    if not pkgs:
        return []
    try:
        p = subprocess.run(list(prefix) + ['pkg-config', what] + pkgs,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
    except OSError as e:
        die_args('pkg-config not found (%s): scripts/install-deps' % e)
    if p.returncode != 0:
        die_args('pkg-config %s: %s (install %s; scripts/install-deps)' % (
            ' '.join(pkgs), p.stderr.strip(),
            ', '.join(DEB_PACKAGES.get(x, x) for x in pkgs)))
    return p.stdout.split()


def build(name, log, prefix=(), root=''):
    """prefix: the command prefix that runs the compiler in a platform,
    root: that platform's root (paths in the command are the platform's,
    the same as here but for build/)"""
    srcs, pkgs, extra = PROGRAMS[name]
    if prefix:
        cc = 'cc'
    else:
        cc = os.environ.get('CC') or shutil.which('cc') or \
            shutil.which('gcc')
        if not cc:
            die_args('no C compiler (cc) to build the load generators: '
                     'scripts/install-deps')
    prog = os.path.join(BIN, name)
    tmp = '%s.tmp.%d' % (prog, os.getpid())
    cmd = list(prefix) + [cc] + CFLAGS + extra + \
        pkg_flags('--cflags', pkgs, prefix) + [
            '-I', SRC, os.path.join(SRC, srcs[0]), '-o', tmp] + LDFLAGS + \
        pkg_flags('--libs', pkgs, prefix)
    log.write('+ %s\n' % ' '.join(cmd))
    log.flush()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    log.write(p.stdout)
    if p.returncode != 0 or not os.path.exists(root + tmp):
        try:
            os.unlink(root + tmp)
        except OSError:
            pass
        die_args('building the load generator %s%s failed:\n%s' % (
            name, ' in the platform' if prefix else '', p.stdout[-3000:]))
    os.rename(root + tmp, root + prog)


def ensure_built(log, prefix=(), root=''):
    """Build every load generator that is missing or stale (log: a file
    the commands and compiler output are written to); with a platform's
    command prefix and root (lib/stack.py gfapi_exec, platform_root), its
    GFAPI_PROGRAMS in the platform as well."""
    todo = stale()
    if todo:
        os.makedirs(BIN, exist_ok=True)
        print('bench: building the load generators %s into %s' % (
            ', '.join(todo), os.path.relpath(BIN, TOP)), flush=True)
        for name in todo:
            build(name, log)
    if not root:
        return todo
    there = stale(GFAPI_PROGRAMS, root)
    if there:
        subprocess.run(list(prefix) + ['mkdir', '-p', BIN])
        print('bench: building %s in the platform into its %s' % (
            ', '.join(there), os.path.relpath(BIN, TOP)), flush=True)
        for name in there:
            build(name, log, prefix, root)
    return todo + there
