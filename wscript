#!/usr/bin/env python3
# glusterfs2: a Samba VFS module serving GlusterFS volumes over SMB.
#
# Built with the waf that ships in the Samba source tree (see ./waf),
# against the headers of exactly the installed smbd's version.  The module
# links only libgfapi, talloc, tevent and libc: every Samba symbol it uses
# stays undefined and unversioned, to be resolved by the smbd that loads it
# (Debian versions Samba's private symbols with a vendor suffix).

import os
import re
import subprocess

from waflib import Errors, Logs, Options, Utils

APPNAME = 'glusterfs2'
VERSION = '0.1.0'

top = '.'
out = 'build'


def _supported_vfs_interfaces(top_dir):
    """The VFS interface versions this code is written for: the range
    include/gf2_compat.h states (the one place of Samba-version
    differences)."""
    vals = {}
    with open(os.path.join(top_dir, 'include', 'gf2_compat.h')) as f:
        for line in f:
            m = re.match(r'#define GF2_VFS_INTERFACE_(MIN|MAX) (\d+)', line)
            if m:
                vals[m.group(1)] = int(m.group(2))
    return vals['MIN'], vals['MAX']

SAMBA_INCLUDES = [
    'bin/default/include',
    'include',
    'source3',
    'source3/include',
    'source3/lib',
    'bin/default/source3',
    'bin/default/source3/include',
    'source4',
    'source4/include',
    'bin/default/source4',
    'lib',
    'lib/replace',
    'bin/default/lib',
    '.',
    'bin/default',
    'librpc',
    'bin/default/librpc',
    'nsswitch',
]

SAMBA_DEFINES = [
    '_SAMBA_BUILD_=4',
    'HAVE_CONFIG_H=1',
    '_GNU_SOURCE=1',
    '_XOPEN_SOURCE_EXTENDED=1',
    '__STDC_WANT_LIB_EXT1__=1',
    '_REENTRANT',
]

# Sources without any Samba or gfapi dependency: unit-tested alone.
CORE_SOURCES = [
    'source/gf2_options.c',
    'source/gf2_readahead.c',
    'source/gf2_acl_xattr.c',
    'source/gf2_mdcache.c',
    'source/gf2_hold.c',
    'source/gf2_pfbook.c',
    'source/gf2_wqueue.c',
    'source/gf2_readplan.c',
    'source/gf2_change.c',
    'source/gf2_wait.c',
    'source/gf2_sambaver.c',
    'source/gf2_shmcache.c',
    'source/gf2_written.c',
]

MODULE_SOURCES = [
    # bridge
    'source/gf2_volume.c',
    'source/gf2_transport.c',
    'source/gf2_async.c',
    'source/gf2_upcall.c',
    'source/gf2_stats.c',
    # caches
    'source/gf2_prefetch.c',
    'source/gf2_meta.c',
    'source/gf2_shread.c',
    'source/gf2_cache.c',
    'source/gf2_wcreg.c',
    'source/gf2_wcdrain.c',
    'source/gf2_wcache.c',
    # engines
    'source/gf2_settle.c',
    'source/gf2_read.c',
    'source/gf2_write.c',
    # VFS glue
    'source/gf2_config.c',
    'source/gf2_paths.c',
    'source/gf2_handles.c',
    'source/gf2_dir.c',
    'source/gf2_metaops.c',
    'source/gf2_dataops.c',
    'source/gf2_acl.c',
    'source/gf2_offload.c',
    'source/vfs_glusterfs2.c',
]

UNIT_TESTS = [
    'test_options',
    'test_readahead',
    'test_acl_xattr',
    'test_mdcache',
    'test_hold',
    'test_pfbook',
    'test_wqueue',
    'test_readplan',
    'test_change',
    'test_wait',
    'test_sambaver',
    'test_shmcache',
    'test_written',
]

# Load generators of the benchmark suite (test/bench/run); not installed.
BENCH_PROGRAMS = {
    'smbload': 'SMBCLIENT',
    'patfile': '',
    'mdfloor': 'GFAPI',
    'atcalls': 'GFAPI',     # only where gfapi has the *at calls
}


def options(opt):
    opt.load('compiler_c')
    grp = opt.add_option_group('glusterfs2 options')
    grp.add_option('--samba-source', dest='samba_source', default=None,
                   help='configured Samba source tree of the installed '
                        'smbd version (default: fetched and prepared by '
                        'scripts/fetch-samba)')
    grp.add_option('--modulesdir', dest='modulesdir', default=None,
                   help='Samba modules directory (default: MODULESDIR '
                        'from `smbd -b`)')
    grp.add_option('--sanitize', dest='sanitize', default='',
                   help='build with sanitizers, e.g. address,undefined')
    grp.add_option('--module-name', dest='module_name', default='glusterfs2',
                   help='name the module is built, installed and registered '
                        'under (vfs objects = NAME): a sanitizer build can '
                        'then be installed beside the normal one, e.g. '
                        'WAFLOCK=.lock-waf-asan ./waf configure '
                        '--out=build-asan --sanitize=address,undefined '
                        '--module-name=glusterfs2_asan (see docs/hacking.md)')
    grp.add_option('--accept-samba-patch-release',
                   dest='accept_patch_release', default=False,
                   action='store_true',
                   help='accept a Samba source tree of another patch '
                        'release of the installed smbd\'s release series '
                        '(4.24.7 for smbd 4.24.8) when the exact one '
                        'cannot be had; a warning says so (also '
                        'GLUSTERFS2_ACCEPT_SAMBA_PATCH_RELEASE=1). smbd '
                        'still refuses a module of another VFS interface '
                        'version when it loads it')
    grp.add_option('--samba-tree-without-smbd',
                   dest='tree_without_smbd', default=False,
                   action='store_true',
                   help='build against a prepared Samba source tree '
                        '(--samba-source) of a release whose smbd is not '
                        'installed here (scripts/prepare-samba-tree): for a '
                        'compile check or a package build for another '
                        'Samba. The version match with the installed smbd '
                        'is not checked; every symbol the module leaves '
                        'undefined is checked against what the tree\'s smbd '
                        'libraries export (scripts/samba-tree-exports). '
                        'The result is for that release\'s smbd only')
    grp.add_option('--samba-version-override',
                   dest='samba_version_override', default=None,
                   help='for tests only: the Samba version the module '
                        'says it was compiled for (MAJOR.MINOR.RELEASE), '
                        'instead of the source tree\'s; a module that '
                        'claims another release series than the running '
                        'smbd refuses to load (test/integration/'
                        'test_samba_release_guard.py)')
    grp.add_option('--debug-build', dest='debug_build', default=False,
                   action='store_true',
                   help='-O0 -g3 instead of -O2 -g')


def _run(cmd):
    try:
        return subprocess.check_output(cmd, stderr=subprocess.STDOUT,
                                       universal_newlines=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise Errors.ConfigurationError('%s failed: %s' % (' '.join(cmd), e))


def _installed_smbd_version():
    out = _run(['smbd', '-V'])
    m = re.search(r'Version\s+(\d+\.\d+\.\d+)', out)
    if m is None:
        raise Errors.ConfigurationError(
            'cannot parse the version of smbd from %r' % out.strip())
    return m.group(1)


def _tree_version(tree):
    vals = {}
    with open(os.path.join(tree, 'VERSION')) as f:
        for line in f:
            m = re.match(r'SAMBA_VERSION_(MAJOR|MINOR|RELEASE)=(\d+)', line)
            if m:
                vals[m.group(1)] = m.group(2)
    return '%s.%s.%s' % (vals.get('MAJOR'), vals.get('MINOR'),
                         vals.get('RELEASE'))


def _tree_vfs_interface(tree):
    with open(os.path.join(tree, 'source3/include/vfs.h')) as f:
        for line in f:
            m = re.match(r'#define SMB_VFS_INTERFACE_VERSION (\d+)', line)
            if m:
                return int(m.group(1))
    return None


def _modulesdir():
    out = _run(['smbd', '-b'])
    m = re.search(r'MODULESDIR:\s*(\S+)', out)
    if m is None:
        raise Errors.ConfigurationError(
            'smbd -b does not print MODULESDIR')
    return m.group(1)


def _multiarch_modulesdir():
    try:
        triplet = subprocess.check_output(
            ['gcc', '-print-multiarch'], universal_newlines=True).strip()
    except (OSError, subprocess.CalledProcessError):
        triplet = ''
    return os.path.join('/usr/lib', triplet, 'samba') if triplet else \
        '/usr/lib/samba'


def configure(conf):
    conf.load('compiler_c')

    if Utils.unversioned_sys_platform() != 'linux':
        conf.fatal('glusterfs2 builds on Linux only')

    override = Options.options.samba_version_override
    if override is not None and \
            not re.match(r'^\d{1,6}\.\d{1,6}\.\d{1,6}$', override):
        conf.fatal('--samba-version-override=%r: MAJOR.MINOR.RELEASE '
                   'expected' % override)

    without_smbd = Options.options.tree_without_smbd
    if without_smbd:
        if not Options.options.samba_source:
            conf.fatal('--samba-tree-without-smbd needs --samba-source=DIR '
                       '(a tree prepared by scripts/prepare-samba-tree)')
        conf.env.SMBD = []
        smbd_version = None
    else:
        conf.start_msg('Checking for smbd')
        if conf.find_program('smbd', var='SMBD', mandatory=False) is None:
            conf.end_msg('not found', color='RED')
            conf.fatal("smbd not found: install the Debian package 'samba' "
                       "(or build for another Samba's tree with "
                       "--samba-tree-without-smbd)")
        smbd_version = _installed_smbd_version()
        conf.end_msg(smbd_version)

    tree = (Options.options.samba_source or
            os.environ.get('GLUSTERFS2_SAMBA_TREE'))
    if not tree:
        conf.fatal('no Samba source tree: run ./waf configure (the wrapper '
                   'fetches one) or pass --samba-source=DIR')
    tree = os.path.abspath(tree)
    conf.start_msg('Checking the Samba source tree')
    if not os.path.isfile(os.path.join(tree, 'source3/include/vfs.h')):
        conf.end_msg('invalid', color='RED')
        conf.fatal('%s is not a Samba source tree' % tree)
    tree_version = _tree_version(tree)
    conf.end_msg('%s (%s)' % (tree, tree_version))
    if without_smbd:
        conf.msg('Building for', 'Samba %s without its smbd: the installed '
                 'smbd is not checked; the module is for Samba %s only' %
                 (tree_version, tree_version), color='YELLOW')
        smbd_version = tree_version
    elif tree_version != smbd_version:
        accept = (Options.options.accept_patch_release or
                  os.environ.get('GLUSTERFS2_ACCEPT_SAMBA_PATCH_RELEASE')
                  == '1')
        same_series = (tree_version.rsplit('.', 1)[0] ==
                       smbd_version.rsplit('.', 1)[0])
        if not (accept and same_series):
            hint = (' (--accept-samba-patch-release takes another patch '
                    'release of the same series)' if same_series else '')
            conf.fatal('the Samba source tree %s is version %s but the '
                       'installed smbd is %s: a module must be built '
                       'against the headers of the smbd that loads it%s' %
                       (tree, tree_version, smbd_version, hint))
        conf.msg('Samba tree of another patch release',
                 'accepted: %s for smbd %s (same release series; smbd '
                 'checks the VFS interface version at load)' %
                 (tree_version, smbd_version), color='YELLOW')

    conf.start_msg('Checking SMB_VFS_INTERFACE_VERSION')
    iface = _tree_vfs_interface(tree)
    conf.end_msg(str(iface))
    lo, hi = _supported_vfs_interfaces(conf.path.abspath())
    if iface is None or not lo <= int(iface) <= hi:
        conf.fatal('SMB_VFS_INTERFACE_VERSION of %s is %s; glusterfs2 '
                   'supports %s' % (tree, iface,
                                    lo if lo == hi else '%d-%d' % (lo, hi)))

    conf.start_msg('Checking the configured Samba headers')
    if not os.path.isfile(os.path.join(
            tree, 'bin/default/include/config.h')):
        conf.end_msg('missing', color='RED')
        conf.fatal('%s is not configured (no bin/default/include/config.h):'
                   ' run scripts/fetch-samba or ./configure there' % tree)
    if not os.path.isfile(os.path.join(
            tree, 'bin/default/librpc/gen_ndr/server_id.h')):
        conf.end_msg('missing', color='RED')
        conf.fatal('%s has no generated NDR headers: run '
                   'scripts/gen-ndr-headers %s' % (tree, tree))
    conf.end_msg('ok')

    conf.env.SAMBA_TREE = tree
    name = Options.options.module_name
    if not re.match(r'^[A-Za-z0-9_]+$', name):
        conf.fatal('--module-name=%r: letters, digits and _ only' % name)
    conf.env.MODULE_NAME = name
    conf.env.SMBD_VERSION = smbd_version
    # The release the module checks the running smbd against when it is
    # loaded (source/gf2_sambaver.c): the headers' own, unless a test
    # makes it claim another.
    built = tree_version
    override = Options.options.samba_version_override
    if override:
        conf.msg('Samba version the module claims', '%s (override; the '
                 'headers are of %s)' % (override, tree_version),
                 color='YELLOW')
        built = override
    conf.env.SAMBA_BUILT_VERSION = built
    conf.env.SAMBA_TREE_WITHOUT_SMBD = without_smbd
    if without_smbd:
        # Debian's and Ubuntu's MODULESDIR unless told
        conf.env.MODULESDIR = (Options.options.modulesdir or
                               _multiarch_modulesdir())
        conf.start_msg('Listing what the tree\'s smbd libraries export')
        exports = os.path.join(conf.bldnode.abspath(), 'samba-exports.txt')
        os.makedirs(conf.bldnode.abspath(), exist_ok=True)
        with open(exports, 'w') as f:
            f.write(_run([os.path.join(conf.path.abspath(), 'scripts',
                                       'samba-tree-exports'), tree]))
        conf.env.SAMBA_EXPORTS = exports
        conf.end_msg(exports)
    else:
        conf.env.MODULESDIR = Options.options.modulesdir or _modulesdir()

    conf.check_cfg(package='glusterfs-api', args='--cflags --libs',
                   uselib_store='GFAPI', msg='Checking for glusterfs-api',
                   errmsg="not found: install the Debian package "
                          "'libglusterfs-dev'")
    conf.start_msg('Checking the glusterfs-api version')
    conf.env.GFAPI_VERSION = conf.cmd_and_log(
        ['pkg-config', '--modversion', 'glusterfs-api']).strip()
    conf.end_msg(conf.env.GFAPI_VERSION)
    # GFAPI_11.0's *at calls (GlusterFS 11, gfapi 7.11): found and
    # reported; the module makes the path calls on both, being measured
    # no faster with them (test/bench/atcalls, docs/samba-versions.md)
    conf.env.HAVE_GFAPI_AT_CALLS = bool(conf.check(
        fragment='#include <glusterfs/api/glfs.h>\n'
                 'int main(void) { return glfs_openat(0, "", 0, 0) != 0 '
                 '&& glfs_fstatat(0, "", 0, 0) != 0; }\n',
        use='GFAPI', msg='Checking for the gfapi *at calls (GFAPI_11.0)',
        mandatory=False))
    conf.check_cfg(package='talloc', args='--cflags --libs',
                   uselib_store='TALLOC', msg='Checking for talloc',
                   errmsg="not found: install 'libtalloc-dev'")
    conf.check_cfg(package='tevent', args='--cflags --libs',
                   uselib_store='TEVENT', msg='Checking for tevent',
                   errmsg="not found: install 'libtevent-dev'")
    conf.check_cfg(package='cmocka', args='--cflags --libs',
                   uselib_store='CMOCKA', msg='Checking for cmocka',
                   errmsg="not found: install 'libcmocka-dev'")
    conf.check_cfg(package='smbclient', args='--cflags --libs',
                   uselib_store='SMBCLIENT', msg='Checking for smbclient',
                   mandatory=False)

    conf.env.append_value('CFLAGS', ['-std=gnu11', '-fPIC', '-pipe',
                                     '-Wall', '-Wmissing-prototypes',
                                     '-Werror=implicit-function-declaration',
                                     '-Werror=incompatible-pointer-types',
                                     '-Werror=return-type',
                                     '-Werror=format'])
    if Options.options.debug_build:
        conf.env.append_value('CFLAGS', ['-O0', '-g3'])
    else:
        conf.env.append_value('CFLAGS', ['-O2', '-g'])
    # Only what the module calls: libgfapi, talloc, tevent, libc.
    conf.env.append_value('LINKFLAGS', ['-Wl,--as-needed'])
    if Options.options.sanitize:
        san = '-fsanitize=%s' % Options.options.sanitize
        # Whole stacks in reports: no frame pointer omission, and no
        # sibling calls (a callback ending in a tail call, such as a gfapi
        # completion handing over to tevent, would vanish from the stack).
        conf.env.append_value('CFLAGS', [san, '-fno-omit-frame-pointer',
                                         '-fno-optimize-sibling-calls'])
        conf.env.append_value('LINKFLAGS', [san])
        conf.env.SANITIZE = Options.options.sanitize
    conf.env.SAMBA_INCLUDES = [os.path.join(tree, d) for d in SAMBA_INCLUDES]
    conf.env.SAMBA_DEFINES = SAMBA_DEFINES

    conf.check(features='c', msg='Checking that smbd VFS headers compile',
               fragment='#include "includes.h"\n'
                        '#include "smbd/smbd.h"\n'
                        '#include <glusterfs/api/glfs.h>\n'
                        'int main(void) { return SMB_VFS_INTERFACE_VERSION'
                        ' == 0; }\n',
               includes=conf.env.SAMBA_INCLUDES,
               defines=SAMBA_DEFINES, use='GFAPI TALLOC TEVENT',
               errmsg='failed (see build/config.log)')

    os.makedirs(conf.bldnode.abspath(), exist_ok=True)
    with open(os.path.join(conf.bldnode.abspath(), '.samba-source'),
              'w') as f:
        f.write(tree + '\n')


def _exported_symbols(paths):
    syms = set()
    for p in paths:
        try:
            out = subprocess.check_output(
                ['nm', '-D', '--defined-only', p],
                stderr=subprocess.DEVNULL, universal_newlines=True)
        except (OSError, subprocess.CalledProcessError):
            continue
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 3:
                syms.add(parts[2].split('@')[0])
    return syms


def _smbd_libraries(smbd):
    out = subprocess.check_output(['ldd', smbd], universal_newlines=True)
    libs = [smbd]
    for line in out.splitlines():
        m = re.search(r'=>\s*(/\S+)', line)
        if m:
            libs.append(m.group(1))
    return libs


def check_symbols(tsk):
    """Fail the build if the module needs a symbol that neither the
    installed smbd (and the libraries it loads) nor the module's own
    dependencies export: smbd would refuse to load it at tree connect."""
    so = tsk.inputs[0].abspath()
    out = subprocess.check_output(['nm', '-D', '--undefined-only', so],
                                  universal_newlines=True)
    needed = set()
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] == 'U':
            needed.add(parts[1].split('@')[0])
        elif len(parts) >= 2 and parts[0] == 'w':
            continue
    if tsk.env.SAMBA_TREE_WITHOUT_SMBD:
        # another release's smbd: what its tree says its libraries export,
        # and the module's own libraries (gfapi, talloc, tevent, libc)
        libs = []
        with open(tsk.env.SAMBA_EXPORTS) as f:
            exported = set(line.strip() for line in f)
        whose = 'the Samba tree\'s smbd libraries do'
    else:
        libs = _smbd_libraries(tsk.env.SMBD[0] if isinstance(
            tsk.env.SMBD, list) else tsk.env.SMBD)
        exported = set()
        whose = 'the installed smbd does'
    ldd = subprocess.check_output(['ldd', so], universal_newlines=True)
    for line in ldd.splitlines():
        m = re.search(r'=>\s*(/\S+)', line)
        if m:
            libs.append(m.group(1))
    missing = sorted(needed - exported - _exported_symbols(libs))
    if tsk.env.SANITIZE:
        # The sanitizer runtimes (libasan, libubsan) are preloaded into
        # smbd for a sanitizer build (test/asan/run): their entry points
        # are not smbd's to export.
        missing = [s for s in missing
                   if not s.startswith(('__asan_', '__ubsan_', '__lsan_',
                                        '__sanitizer_'))]
    if missing:
        Logs.error('%s needs symbols %s not export: %s' %
                   (os.path.basename(so), whose, ', '.join(missing)))
        return 1
    tsk.outputs[0].write('ok\n')
    return 0


def build(bld):
    bld.env.cshlib_PATTERN = '%s.so'

    bld.stlib(source=CORE_SOURCES, target='gf2core', includes='include',
              cflags=['-fPIC'])

    name = bld.env.MODULE_NAME or 'glusterfs2'
    defines = list(bld.env.SAMBA_DEFINES)
    if name != 'glusterfs2':
        defines.append('GF2_REGISTER_NAME="%s"' % name)
    defines.append('GF2_SAMBA_BUILT_VERSION="%s"' % (
        bld.env.SAMBA_BUILT_VERSION or _tree_version(bld.env.SAMBA_TREE)))
    bld.shlib(source=MODULE_SOURCES, target=name,
              includes=['include'] + bld.env.SAMBA_INCLUDES,
              defines=defines,
              use='gf2core GFAPI TALLOC TEVENT',
              install_path=os.path.join(bld.env.MODULESDIR, 'vfs'),
              chmod=Utils.O755)

    bld(rule=check_symbols, source=name + '.so',
        target=name + '.symbols-ok', always=False)

    if name == 'glusterfs2':
        # PREFIX/share/man/man8 (/usr/local by default; the Debian package
        # configures --prefix=/usr).
        mandir = bld.env.MANDIR or os.path.join(
            bld.env.PREFIX or '/usr/local', 'share', 'man')
        bld.install_files(os.path.join(mandir, 'man8'),
                          ['docs/vfs_glusterfs2.8'])
        # the counters tool (docs/design.md: Counters) and the preflight
        # check of smb.conf and the volumes
        bld.install_files(os.path.join(bld.env.PREFIX or '/usr/local',
                                       'bin'),
                          ['tools/glusterfs2-stats',
                           'tools/glusterfs2-check'], chmod=0o755)
        # the Grafana dashboard of those counters in Prometheus
        bld.install_files(os.path.join(bld.env.PREFIX or '/usr/local',
                                       'share', 'glusterfs2'),
                          ['tools/glusterfs2-dashboard.json'])

    # the CTDB cluster lock held through libgfapi (docs/ctdb.md)
    bld.program(source=['tools/ctdb_mutex_glusterfs2_helper.c'],
                target='ctdb_mutex_glusterfs2_helper', use='GFAPI',
                install_path=(os.path.join(bld.env.PREFIX or '/usr/local',
                                           'libexec', 'glusterfs2')
                              if name == 'glusterfs2' else None))

    for t in UNIT_TESTS:
        # test_wait counts the frees of the gate it watches
        bld.program(source=['test/unit/%s.c' % t], target='test/unit/%s' % t,
                    includes=['include', 'source'],
                    use='gf2core CMOCKA TALLOC',
                    linkflags=(['-Wl,--wrap=free'] if t == 'test_wait'
                               else []),
                    install_path=None)

    if not bld.env.LIB_SMBCLIENT:
        # trees configured before the benchmarks existed: ask pkg-config
        try:
            bld.env.INCLUDES_SMBCLIENT = [f[2:] for f in subprocess.check_output(
                ['pkg-config', '--cflags-only-I', 'smbclient'],
                universal_newlines=True).split()]
            bld.env.LIB_SMBCLIENT = ['smbclient']
        except (OSError, subprocess.CalledProcessError):
            Logs.warn('pkg-config smbclient failed: install libsmbclient-dev '
                      'to build the benchmark load generators')
    for t, uses in sorted(BENCH_PROGRAMS.items()):
        if 'SMBCLIENT' in uses and not bld.env.LIB_SMBCLIENT:
            continue
        if t == 'atcalls' and not bld.env.HAVE_GFAPI_AT_CALLS:
            continue
        bld.program(source=['test/bench/%s.c' % t], target='test/bench/%s' % t,
                    includes=['test/bench'], use=uses, install_path=None)
    bld.shlib(source=['test/bench/nofini.c'], target='test/bench/gf2nofini',
              install_path=None)
