#!/usr/bin/python3
"""Sanitizer plumbing shared by test/asan/run, test/stack (--asan) and the
integration tests' private smbds (test/integration/gf2_private_smbd.py):

  - the sanitizer build of the module (build-asan/, registered and
    installed as MODULESDIR/vfs/NAME_asan.so, where NAME is the stack's
    module, GF2_STACK_MODULE or glusterfs2: glusterfs2_asan.so by
    default; never touching NAME.so), rebuilt only when older than
    source/, include/, wscript or configured under another name;
  - the environment of an smbd with libasan preloaded (reports per
    process into a directory, symbolized afterwards);
  - reading the reports: symbolization with addr2line and the
    classification (attributed to glusterfs2 / leaks that another
    library allocated under a glusterfs2 call / without glusterfs2
    frames), described in test/asan/run's help.

As a command:

  test/asan/sanitizers.py build [--no-build] [--logdir DIR]
      build (when stale) and install NAME_asan.so; prints its path
  test/asan/sanitizers.py env REPORTS [TAG]
      shell-sourceable LD_PRELOAD, ASAN_OPTIONS, LSAN_OPTIONS,
      UBSAN_OPTIONS lines for an smbd writing its reports into REPORTS
  test/asan/sanitizers.py analyse REPORTS [--strict-leaks] [--labels F]
      classify the reports of REPORTS; the last line is
      "sanitizer reports: N attributed to glusterfs2, N leaks under
      glusterfs2 calls, N without glusterfs2 frames"; exit status 1 when
      any report is attributed to glusterfs2

Module frames: a frame in glusterfs2*.so, in source/gf2_*.c or
source/vfs_glusterfs2.c, or in a function named gf2_* / vfs_glusterfs2_*.
"""

import argparse
import collections
import filecmp
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
BUILD_DIR = os.path.join(TOP, 'build-asan')
# inside a test platform (test/platform/root run) build-asan/ is the
# platform's own directory, and so is the waf lock naming it
WAFLOCK = '.lock-waf-asan' + ('-' + os.environ['GF2_PLATFORM']
                              if os.environ.get('GF2_PLATFORM') else '')


def asan_module_name(environ=None):
    """The sanitizer build's module name: the stack's module
    (GF2_STACK_MODULE, as test/stack reads it; glusterfs2) with _asan, so
    that stacks serving their own builds beside each other each install
    their own sanitizer module (test/stack env prints it as
    ASAN_MODULE)."""
    base = (environ or os.environ).get('GF2_STACK_MODULE') or 'glusterfs2'
    if not re.match(r'^[A-Za-z0-9_]+$', base):
        raise SystemExit('sanitizers: GF2_STACK_MODULE=%s: letters, digits '
                         'and _ only' % base)
    return base + '_asan'


MODULE = asan_module_name()


def _log(msg=''):
    print(msg, flush=True)

MODULE_FRAME_RE = re.compile(
    r'glusterfs2\w*\.so|/source/(gf2_\w+|vfs_glusterfs2)\.c'
    r'|\bin (gf2_\w+|vfs_glusterfs2\w*) ')
# Frames that only pass an allocation through (the allocator itself and
# the wrappers that allocate for their caller).
PASSTHROUGH_FRAME_RE = re.compile(
    r'libasan\.so|libubsan\.so|/libsanitizer/|libc\.so|libtalloc\.so'
    r'|libtevent\.so|/talloc\.c:|/tevent\w*\.c:'
    r'|\bin (__interceptor_\w+|__asan_\w+|__lsan_\w+|malloc|calloc|realloc'
    r'|free|strdup|strndup|__strdup|vasprintf|asprintf|_?talloc\w*'
    r'|__talloc\w*|_tevent\w*|tevent_\w*) ')
FRAME_RE = re.compile(r'^\s*#(\d+) 0x[0-9a-f]+ (.*)$')


# ---------------------------------------------------------------- build

def newest_source_mtime():
    paths = (glob.glob(os.path.join(TOP, 'source', '*.[ch]')) +
             glob.glob(os.path.join(TOP, 'include', '*.h')) +
             [os.path.join(TOP, 'wscript')])
    return max(os.path.getmtime(p) for p in paths)


def waf(args, logf):
    env = dict(os.environ, WAFLOCK=WAFLOCK)
    logf.write('$ WAFLOCK=%s ./waf %s\n' % (WAFLOCK, ' '.join(args)))
    logf.flush()
    return subprocess.run([os.path.join(TOP, 'waf')] + args, cwd=TOP,
                          env=env, stdout=logf,
                          stderr=subprocess.STDOUT).returncode


def configured_name(cache):
    """The --module-name build-asan/ was configured with, or None."""
    try:
        with open(cache) as f:
            m = re.search(r"^MODULE_NAME = '(\w+)'$", f.read(), re.M)
    except OSError:
        return None
    return m.group(1) if m else None


def build_module(logdir, log=None):
    """The sanitizer build, rebuilt only when stale; returns the .so
    (None on failure; the build log is LOGDIR/build.log)."""
    log = log or _log
    so = os.path.join(BUILD_DIR, MODULE + '.so')
    cache = os.path.join(BUILD_DIR, 'c4che', '_cache.py')
    newest = newest_source_mtime()
    named = configured_name(cache) == MODULE
    if named and os.path.exists(so) and os.path.getmtime(so) >= newest and \
            os.path.exists(os.path.join(TOP, WAFLOCK)):
        log('build: %s is up to date' % os.path.relpath(so, TOP))
        return so
    os.makedirs(logdir, exist_ok=True)
    buildlog = os.path.join(logdir, 'build.log')
    with open(buildlog, 'w') as logf:
        if not named or \
                not os.path.exists(os.path.join(TOP, WAFLOCK)) or \
                os.path.getmtime(cache) < os.path.getmtime(
                    os.path.join(TOP, 'wscript')) or \
                "MODULE_NAME = '%s'\n" % MODULE not in open(cache).read():
            log('build: configuring build-asan/')
            if waf(['configure', '--out=' + BUILD_DIR,
                    '--sanitize=address,undefined',
                    '--module-name=' + MODULE], logf) != 0:
                return None
        log('build: building %s' % os.path.relpath(so, TOP))
        if waf(['build', '-j2'], logf) != 0:
            return None
    return so if os.path.exists(so) else None


def modulesdir():
    out = subprocess.run(['smbd', '-b'], stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    m = re.search(r'MODULESDIR:\s*(\S+)', out)
    return m.group(1) if m else None


def install_module(so):
    """MODULESDIR/vfs/MODULE.so, replaced atomically (a process
    that has the old file mapped keeps it)."""
    dest = os.path.join(modulesdir(), 'vfs', MODULE + '.so')
    if os.path.exists(dest) and filecmp.cmp(so, dest, shallow=False):
        return dest
    tmp = '%s.tmp.%d' % (dest, os.getpid())
    shutil.copyfile(so, tmp)
    os.chmod(tmp, 0o755)
    os.rename(tmp, dest)
    return dest


# ---------------------------------------------------------------- smbd

def libasan_path():
    p = subprocess.run(['gcc', '-print-file-name=libasan.so'],
                       stdout=subprocess.PIPE, universal_newlines=True)
    path = os.path.realpath(p.stdout.strip())
    return path if os.path.exists(path) else None


def sanitizer_env(libasan, reports, tag=None, base=None):
    """The environment of an smbd with libasan preloaded: every process
    writes its reports to REPORTS/asan[.TAG].PID and
    REPORTS/ubsan[.TAG].PID (TAG tells apart the smbds of one run)."""
    env = dict(os.environ if base is None else base)
    suffix = '.' + tag if tag else ''
    env['LD_PRELOAD'] = libasan
    env['ASAN_OPTIONS'] = ':'.join([
        'log_path=' + os.path.join(reports, 'asan' + suffix),
        'verify_asan_link_order=0',     # smbd is not linked with libasan
        'detect_leaks=1',
        'fast_unwind_on_malloc=0',      # Samba/gluster lack frame pointers
        'malloc_context_size=30',
        'allow_user_segv_handler=0',    # keep SEGV reports (smbd's own
        'handle_segv=1',                # handler would only panic)
        'handle_abort=1',               # smb_panic()/abort() get a stack
        'detect_odr_violation=0',
        # No symbolization in smbd: ASan's own symbolizer deadlocks when
        # an error in one thread meets the exit-time leak check in the
        # main thread (both want the loader lock and the thread registry;
        # the process then hangs with half a report).  The reports are
        # symbolized afterwards (symbolize_reports).
        'symbolize=0',
    ])
    env['LSAN_OPTIONS'] = 'print_suppressions=0:use_unaligned=1'
    env['UBSAN_OPTIONS'] = ':'.join([
        'print_stacktrace=1',
        'symbolize=0',
        'log_path=' + os.path.join(reports, 'ubsan' + suffix),
        'halt_on_error=0',
    ])
    return env


# ---------------------------------------------------------------- reports

class Report:
    def __init__(self, path, kind, text):
        self.path = path
        self.kind = kind            # error kind or 'leak'
        self.text = text
        self.frames = [m.group(2) for m in
                       (FRAME_RE.match(l) for l in text.splitlines()) if m]

    def module_frames(self):
        return [f for f in self.frames if MODULE_FRAME_RE.search(f)] + \
            ([self.text.splitlines()[0]]
             if MODULE_FRAME_RE.search(self.text.splitlines()[0]) else [])

    def allocator(self):
        """First frame past the allocators (leaks)."""
        for f in self.frames:
            if not PASSTHROUGH_FRAME_RE.search(f):
                return f
        return self.frames[0] if self.frames else '?'

    def from_allocator(self, n=8):
        for i, f in enumerate(self.frames):
            if not PASSTHROUGH_FRAME_RE.search(f):
                return self.frames[i:i + n]
        return self.frames[:n]

    def top(self, n=6):
        return self.frames[:n]


RAW_FRAME_RE = re.compile(r'^(\s*#\d+ 0x[0-9a-f]+) +\((/[^()+]+)\+(0x[0-9a-f]+)\)$')
SYMBOLIZED_MARK = '# symbolized by test/asan/run (addr2line)\n'


def addr2line(path, offsets):
    """{offset: 'in FUNC FILE:LINE[ (inlined in ...)]'} via binutils."""
    out = {}
    if not os.path.exists(path):
        return out
    offsets = sorted(offsets)
    for i in range(0, len(offsets), 500):
        chunk = offsets[i:i + 500]
        try:
            p = subprocess.run(['addr2line', '-a', '-f', '-i', '-C', '-e',
                                path] + chunk, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL,
                               universal_newlines=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            return out
        cur = None
        chain = []

        def flush():
            # Only answers backed by debug information (a source line):
            # without it addr2line names the nearest exported symbol, which
            # is wrong for every static function of a stripped library.
            if cur is None or not chain or chain[0][1].startswith('??'):
                return
            parts = ['%s %s' % (fn, loc) for fn, loc in chain]
            out[cur] = 'in ' + parts[0] + ''.join(
                ' (inlined in %s)' % x for x in parts[1:])
        lines = p.stdout.splitlines()
        j = 0
        while j < len(lines):
            line = lines[j]
            if re.match(r'^0x[0-9a-f]+$', line):
                flush()
                cur = '0x%x' % int(line, 16)
                chain = []
                j += 1
                continue
            fn = line
            loc = lines[j + 1] if j + 1 < len(lines) else '??:0'
            chain.append((fn, re.sub(r' \(discriminator \d+\)', '', loc)))
            j += 2
        flush()
    return out


def dynsym_names(path, offsets):
    """{offset: 'in SYMBOL'} for offsets inside an exported symbol
    (its address and size from nm -D -S)."""
    try:
        p = subprocess.run(['nm', '-D', '-S', '--defined-only', path],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           universal_newlines=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    syms = []
    for line in p.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2].lower() in 'tw':
            syms.append((int(parts[0], 16), int(parts[1], 16),
                         parts[3].split('@')[0]))
    syms.sort()
    out = {}
    for off in offsets:
        o = int(off, 16)
        for addr, size, name in syms:
            if addr <= o < addr + size:
                out[off] = 'in ' + name
                break
    return out


def symbolize_reports(files):
    """Give raw frames '(LIB+0xOFF)' a function and a source line, with
    binutils' addr2line (the module has full debug info; other libraries
    get their exported symbol names).  Done once per file."""
    texts = {}
    wanted = collections.defaultdict(set)
    for p in files:
        with open(p, errors='replace') as f:
            text = f.read()
        if text.startswith(SYMBOLIZED_MARK):
            continue
        texts[p] = text
        for line in text.splitlines():
            m = RAW_FRAME_RE.match(line)
            if m:
                wanted[m.group(2)].add('0x%x' % int(m.group(3), 16))
    if not texts:
        return
    names = {}
    for lib, offs in wanted.items():
        found = addr2line(lib, offs)
        rest = [o for o in offs if o not in found]
        if rest:
            found.update(dynsym_names(lib, rest))
        for off, name in found.items():
            names[(lib, off)] = name
    for p, text in texts.items():
        lines = []
        for line in text.splitlines():
            m = RAW_FRAME_RE.match(line)
            if m:
                name = names.get((m.group(2), '0x%x' % int(m.group(3), 16)))
                if name:
                    line = '%s %s (%s+%s)' % (m.group(1), name, m.group(2),
                                              m.group(3))
            lines.append(line)
        with open(p, 'w') as f:
            f.write(SYMBOLIZED_MARK + '\n'.join(lines) + '\n')


# Warnings of the runtime that are not reports.  gluster's synctasks
# switch stacks with swapcontext, and ASan says once per process that it
# does not follow such switches fully; any error it then reports is
# classified on its own.
RUNTIME_WARNING_RE = re.compile(
    r"^==\d+==WARNING: ASan doesn't fully support makecontext/swapcontext"
    r"[^\n]*\n?", re.M)


def split_reports(path):
    with open(path, errors='replace') as f:
        text = f.read()
    if text.startswith(SYMBOLIZED_MARK):
        text = text[len(SYMBOLIZED_MARK):]
    reports = []
    warnings = RUNTIME_WARNING_RE.findall(text)
    if warnings:
        text = RUNTIME_WARNING_RE.sub('', text)
        reports.append(Report(path, 'warning: makecontext/swapcontext '
                              '(gluster synctasks)', warnings[0].strip()))
    if os.path.basename(path).startswith('ubsan'):
        # "FILE:LINE:COL: runtime error: ..." then an optional stack
        blocks = re.split(r'\n(?=\S[^\n]*: runtime error: )', '\n' + text)
        for b in blocks:
            b = b.strip('\n')
            if 'runtime error' in b:
                m = re.search(r'runtime error: (.*)', b)
                reports.append(Report(path, 'ubsan: ' + m.group(1)[:80], b))
        return reports
    # ASan: one "==PID==ERROR: ..." per file for errors (the process
    # stops), LeakSanitizer lists many leaks: one report per leak.
    if 'ERROR: LeakSanitizer' in text:
        body = text.split('ERROR: LeakSanitizer', 1)[1]
        for b in re.split(r'\n(?=(?:Direct|Indirect) leak of )', body):
            if re.match(r'(Direct|Indirect) leak of', b):
                b = b.split('\nSUMMARY:')[0].rstrip()
                kind = 'leak (%s)' % b.split()[0].lower()
                reports.append(Report(path, kind, b))
        pre = text.split('ERROR: LeakSanitizer', 1)[0]
        if 'ERROR: AddressSanitizer' in pre:
            text = pre
        else:
            return reports
    for m in re.finditer(r'ERROR: (AddressSanitizer|LeakSanitizer)'
                         r'[^\n]*', text):
        start = text.rfind('\n=====', 0, m.start())
        end = text.find('\n==ABORTING', m.end())
        chunk = text[start if start >= 0 else 0:
                     end if end >= 0 else len(text)].strip()
        kind = re.sub(r'^ERROR: \w+: ', '', m.group(0))
        kind = re.sub(r' on (unknown )?address.*', '', kind)
        reports.append(Report(path, kind, chunk))
    if not [r for r in reports if not r.kind.startswith('warning')] and \
            text.strip():
        # a runtime message that is not a report (e.g. a fatal error of
        # LeakSanitizer itself): keep it visible
        reports.append(Report(path, 'sanitizer message', text.strip()))
    return reports


def child_labels(path):
    """{pid: what it served} from a file of "PID LABEL" lines."""
    labels = {}
    if not path:
        return labels
    try:
        with open(path) as f:
            for line in f:
                pid, _, label = line.strip().partition(' ')
                labels[int(pid)] = label
    except (OSError, ValueError):
        pass
    return labels


def served(path, labels):
    m = re.search(r'\.(\d+)$', path)
    label = labels.get(int(m.group(1))) if m else None
    return ' (smbd pid %s, served: %s)' % (m.group(1), label) if label \
        else ''


def analyse_reports(reports_dir, strict_leaks=False, labels_file=None,
                    log=None):
    """Symbolize and classify every report in the directory REPORTS_DIR;
    print the summary and the reports attributed to glusterfs2 whole.
    Returns (module, under_module, other), lists of Report:
      module        errors with a glusterfs2 frame in any stack, leaks
                    allocated by glusterfs2 code (and, with strict_leaks,
                    leaks allocated by another library under a glusterfs2
                    call), errors whose stack was never written;
      under_module  leaks allocated by another library (gfapi) under a
                    glusterfs2 call;
      other         reports without glusterfs2 frames."""
    log = log or _log
    files = sorted(glob.glob(os.path.join(reports_dir, 'asan.*')) +
                   glob.glob(os.path.join(reports_dir, 'ubsan.*')))
    symbolize_reports(files)
    reports = []
    for p in files:
        reports += split_reports(p)
    warnings = [r for r in reports if r.kind.startswith('warning')]
    reports = [r for r in reports if not r.kind.startswith('warning')]
    module, under_module, other = [], [], []
    for r in reports:
        mf = r.module_frames()
        if not r.frames and not r.kind.startswith(('leak', 'ubsan')):
            # an error whose stack never got written (the process died or
            # hung while reporting): nothing clears glusterfs2 of it
            r.kind += ', no stack in the report'
            module.append(r)
            continue
        if r.kind.startswith('leak'):
            if MODULE_FRAME_RE.search(r.allocator()):
                module.append(r)
            elif mf:
                (module if strict_leaks else under_module).append(r)
            else:
                other.append(r)
        elif mf:
            module.append(r)
        else:
            other.append(r)
    log('\nsanitizer reports: %d in %d files (%s)' % (
        len(reports), len(files), os.path.relpath(reports_dir, TOP)))
    log('  attributed to glusterfs2 (or an error without a stack): %d' %
        len(module))
    log('  leaks allocated by other libraries under a glusterfs2 call: %d'
        '%s' % (len(under_module), ' (failures: --strict-leaks)'
                if strict_leaks else ''))
    log('  without glusterfs2 frames: %d' % len(other))
    if warnings:
        log('  (not reports: %d processes warned that ASan does not fully '
            'follow makecontext/swapcontext, gluster\'s synctasks)'
            % len(warnings))
    labels = child_labels(labels_file)
    for r in module:
        log('\n---- glusterfs2 report (%s) in %s%s\n%s' % (
            r.kind, os.path.relpath(r.path, TOP), served(r.path, labels),
            r.text[:12000]))
    groups = collections.OrderedDict()
    for r in under_module:
        groups.setdefault(tuple(r.from_allocator(8)), []).append(r)
    for frames, rs in groups.items():
        log('\n---- %d leak(s) allocated by another library under a '
            'glusterfs2 call (%s), e.g. %s; frames from the allocation:' % (
                len(rs), ', '.join(sorted(set(r.kind for r in rs))),
                os.path.relpath(rs[0].path, TOP)))
        for f in frames:
            log('    ' + f)
    if other:
        groups = collections.Counter((r.kind.split(' (')[0],
                                      r.allocator()[:110]) for r in other)
        log('\n  without glusterfs2 frames, by kind and first frame past '
            'the allocators:')
        for (kind, frame), n in groups.most_common(15):
            log('    %4d  %s  %s' % (n, kind, frame))
        if len(groups) > 15:
            log('    ... %d more groups' % (len(groups) - 15))
    return module, under_module, other


# ---------------------------------------------------------------- command

def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest='cmd', required=True)
    b = sub.add_parser('build', help='build (when stale) and install %s.so'
                       % MODULE)
    b.add_argument('--logdir', default=os.path.join(TOP, '.stack', 'asan'))
    b.add_argument('--no-build', action='store_true',
                   help='install build-asan/ as it is')
    e = sub.add_parser('env', help='sanitizer environment of an smbd')
    e.add_argument('reports')
    e.add_argument('tag', nargs='?')
    a = sub.add_parser('analyse', help='classify the reports of a directory')
    a.add_argument('reports')
    a.add_argument('--strict-leaks', action='store_true')
    a.add_argument('--labels')
    args = ap.parse_args()
    if args.cmd == 'build':
        def err(msg):
            print(msg, file=sys.stderr)
        so = os.path.join(BUILD_DIR, MODULE + '.so') if args.no_build \
            else build_module(args.logdir, log=err)
        if not so or not os.path.exists(so):
            err('sanitizers: no %s (see %s)' % (
                os.path.relpath(os.path.join(BUILD_DIR, MODULE + '.so'), TOP),
                os.path.join(args.logdir, 'build.log')))
            return 1
        print(install_module(so))
        return 0
    if args.cmd == 'env':
        lib = libasan_path()
        if not lib:
            print('sanitizers: libasan not found (gcc -print-file-name='
                  'libasan.so)', file=sys.stderr)
            return 1
        env = sanitizer_env(lib, os.path.abspath(args.reports), args.tag,
                            base={})
        for k in ('LD_PRELOAD', 'ASAN_OPTIONS', 'LSAN_OPTIONS',
                  'UBSAN_OPTIONS'):
            print('%s=%s' % (k, shlex.quote(env[k])))
        return 0
    module, under, other = analyse_reports(args.reports, args.strict_leaks,
                                           args.labels)
    print('sanitizer reports: %d attributed to glusterfs2, %d leaks under '
          'glusterfs2 calls, %d without glusterfs2 frames' % (
              len(module), len(under), len(other)))
    return 1 if module else 0


if __name__ == '__main__':
    sys.exit(main())
