"""The load generators (test/bench/*.c): built here, by the benchmark
itself, whenever one is missing or older than its sources, so that a run
needs neither a configured tree nor `test/stack up` to have built them.

They are compiled straight with cc (flags as wscript's, libraries from
pkg-config) into build/test/bench/, where `./waf build` puts the same
programs; nothing is installed.  Each is written under a temporary name
and renamed into place, so that a program another run is executing is
never overwritten."""

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

# the Debian package that brings each pkg-config package
DEB_PACKAGES = {'smbclient': 'libsmbclient-dev',
                'glusterfs-api': 'libglusterfs-dev'}


def stale():
    """the outputs that are missing or older than one of their sources"""
    out = []
    for name, (srcs, _, _) in sorted(PROGRAMS.items()):
        prog = os.path.join(BIN, name)
        newest = max(os.path.getmtime(os.path.join(SRC, s)) for s in srcs)
        if not os.path.exists(prog) or os.path.getmtime(prog) < newest:
            out.append(name)
    return out


def pkg_flags(what, pkgs):
    """what: --cflags or --libs"""
    if not pkgs:
        return []
    try:
        p = subprocess.run(['pkg-config', what] + pkgs,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
    except OSError as e:
        die_args('pkg-config not found (%s): scripts/install-deps' % e)
    if p.returncode != 0:
        die_args('pkg-config %s: %s (install %s; scripts/install-deps)' % (
            ' '.join(pkgs), p.stderr.strip(),
            ', '.join(DEB_PACKAGES.get(x, x) for x in pkgs)))
    return p.stdout.split()


def build(name, log):
    srcs, pkgs, extra = PROGRAMS[name]
    cc = os.environ.get('CC') or shutil.which('cc') or shutil.which('gcc')
    if not cc:
        die_args('no C compiler (cc) to build the load generators: '
                 'scripts/install-deps')
    prog = os.path.join(BIN, name)
    tmp = '%s.tmp.%d' % (prog, os.getpid())
    cmd = [cc] + CFLAGS + extra + pkg_flags('--cflags', pkgs) + [
        '-I', SRC, os.path.join(SRC, srcs[0]), '-o', tmp] + LDFLAGS + \
        pkg_flags('--libs', pkgs)
    log.write('+ %s\n' % ' '.join(cmd))
    log.flush()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    log.write(p.stdout)
    if p.returncode != 0 or not os.path.exists(tmp):
        try:
            os.unlink(tmp)
        except OSError:
            pass
        die_args('building the load generator %s failed:\n%s' % (
            name, p.stdout[-3000:]))
    os.rename(tmp, prog)


def ensure_built(log):
    """Build every load generator that is missing or stale (log: a file
    the commands and compiler output are written to)."""
    todo = stale()
    if not todo:
        return []
    os.makedirs(BIN, exist_ok=True)
    print('bench: building the load generators %s into %s' % (
        ', '.join(todo), os.path.relpath(BIN, TOP)), flush=True)
    for name in todo:
        build(name, log)
    return todo
