"""The command line of test/bench/run: arguments, checks, the run, the
results written and summed up."""

import argparse
import datetime
import os
import re
import shutil
import signal
import subprocess

from .bench import Bench
from .build import ensure_built
from .chart import write_chart
from .common import (ALL_BACKENDS, ALL_SMB_SHARES, BACKENDS, BASE, BASE_WC, DATADIR,
                     NOPF, PREFETCH_COMPARE_BACKENDS,
                     PREFETCH_COMPARE_WORKLOADS, SHARE_ALIASES, TOP,
                     WORKLOAD_NAMES, WORKLOADS, default_run_dir, die_args,
                     now)
from .config import Config
from .meta import versions
from .report import (summarize, write_csv, write_json, write_markdown,
                     write_summary_json)
from .stack import (GROUPS_DIR, VolumeGroup, gfapi_exec, gluster_cmd,
                    platform_root, stack_env)


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog='test/bench/run',
        description='glusterfs2 benchmark suite: local, fuse, glusterfs, '
                    'glusterfs2 shares of the local stack (+ raw gfapi via '
                    'fio), interleaved and repeated.')
    ap.add_argument('--quick', action='store_true',
                    help='small sizes, 1 repetition, every workload '
                         '(about 4 minutes on two cores)')
    ap.add_argument('--workloads', default=None,
                    help='comma-separated subset of: ' +
                         ','.join(WORKLOAD_NAMES))
    ap.add_argument('--shares', default=None,
                    help='comma-separated subset of: ' + ','.join(BACKENDS) +
                         ' (gfapi = raw libgfapi through fio; default: '
                         'all of these), and %s (alias gf2-nopf: the '
                         'module with prefetch off) and %s (alias '
                         'gf2-base: a baseline build of the module, '
                         'test/bench/baseline REV; ratios glusterfs2/%s; '
                         'and %s, alias gf2-base-wc: that build with the '
                         'write cache on, beside gf2-wc)'
                         % (NOPF, BASE, BASE, BASE_WC))
    ap.add_argument('--prefetch-compare', action='store_true',
                    help='the module with and without prefetch against the '
                         'stock module: seqread (64K and 1M, warm), '
                         'randread (depth 1 and 8), seqwrite (64K and 1M) '
                         'on %s; with --quick, at --quick sizes' %
                         ','.join(PREFETCH_COMPARE_BACKENDS))
    ap.add_argument('--reps', default=None,
                    help='repetitions (default 3, --quick 1)')
    ap.add_argument('--out', default=None,
                    help='results directory (default results/KIND-PLATFORM-'
                         'COMMIT/, KIND run or prefetch-compare, PLATFORM '
                         'this machine\'s codename or --platform; -2, -3... '
                         'appended when taken)')
    ap.add_argument('--volume-group', default=None, metavar='GROUP',
                    help='apply gluster option group GROUP (a file in '
                         '%s, e.g. samba) to the stack\'s volume for the '
                         'run, and put the volume\'s options back as they '
                         'were afterwards' % GROUPS_DIR)
    ap.add_argument('--platform', default=None, metavar='NAME',
                    help='the stack of a test platform (test/stack up '
                         '--platform NAME: trixie, trixie-backports, forky; '
                         'bookworm is this machine, as without it): its '
                         'shares beside its own stock module, and raw gfapi '
                         'through the platform\'s own fio and libgfapi '
                         '(run in the platform, against its volume); no '
                         '--volume-group, no baseline share')
    ap.add_argument('--list', action='store_true',
                    help='list the workloads and exit')
    ap.add_argument('--clean', action='store_true',
                    help='remove the benchmark files from the volume and '
                         'the local share, and exit')
    return ap.parse_args(argv)


def volume_layout(info):
    """'2-brick distribute', '3-brick replicate', '6-brick
    distributed-replicate' from `gluster volume info`; '' if not known."""
    vtype = nbricks = None
    for line in info.splitlines():
        if line.startswith('Type:'):
            vtype = line.split(':', 1)[1].strip().lower()
        elif line.startswith('Number of Bricks:'):
            v = line.split(':', 1)[1].strip()
            # '2', or '1 x 3 = 3', or '2 x 3 = 6'
            nbricks = v.split('=')[-1].strip()
    if not vtype or not nbricks:
        return ''
    return '%s-brick %s' % (nbricks, vtype)


def parse_list(s, known, what, aliases=None):
    items = [x.strip() for x in s.split(',') if x.strip()]
    items = [(aliases or {}).get(x, x) for x in items]
    if not items:
        die_args('--%s needs at least one name (known: %s)' %
                 (what, ', '.join(known)))
    for x in items:
        if x not in known:
            die_args('unknown %s \'%s\' (known: %s)' % (
                what.rstrip('s'), x, ', '.join(known)))
    return [k for k in known if k in items]


def check_fio(env, platform):
    """fio with the gfapi engines where the gfapi clients run (here, or
    in the platform)"""
    where = ' in platform %s (test/platform/root build %s installs it)' % (
        platform, platform) if platform else ' (scripts/install-deps)'
    try:
        p = subprocess.run(gfapi_exec(env) + ['fio', '--enghelp'],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        die_args('cannot run fio%s: %s' % (where, e))
    if p.returncode != 0:
        die_args('fio not found%s: %s' % (where, p.stdout.strip()[-200:]))
    engines = p.stdout.split()
    if 'gfapi' not in engines or 'gfapi_async' not in engines:
        die_args('fio%s has no gfapi and gfapi_async engines' % (
            ' in platform %s' % platform if platform else ''))


def main(argv):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # `| head` ends quietly
    args = parse_args(argv)
    if args.list:
        import textwrap
        for name, desc in WORKLOADS:
            print(textwrap.fill(desc, 78, initial_indent='%-13s' % name,
                                subsequent_indent=' ' * 13))
        return 0
    if args.prefetch_compare and (args.workloads is not None or
                                  args.shares is not None):
        die_args('--prefetch-compare chooses the workloads and shares '
                 'itself: no --workloads or --shares with it')
    workloads = parse_list(args.workloads, WORKLOAD_NAMES, 'workloads') \
        if args.workloads is not None else list(WORKLOAD_NAMES)
    platform = args.platform
    if platform in ('bookworm', 'debian12'):
        platform = None
    if platform is not None and not re.fullmatch(r'[a-z0-9][a-z0-9-]*',
                                                 platform):
        die_args('--platform: not a platform name: \'%s\'' % platform)
    backends = parse_list(args.shares, ALL_BACKENDS, 'shares',
                          SHARE_ALIASES) \
        if args.shares is not None else list(BACKENDS)
    if platform and BASE in backends:
        die_args('--platform %s: no share %s there (the baseline build is '
                 'this machine\'s)' % (platform, BASE))
    if platform and args.volume_group is not None:
        die_args('--platform %s: no --volume-group (the option groups are '
                 'this machine\'s glusterd\'s)' % platform)
    if args.prefetch_compare:
        workloads = [w for w in WORKLOAD_NAMES
                     if w in PREFETCH_COMPARE_WORKLOADS]
        backends = [b for b in ALL_BACKENDS
                    if b in PREFETCH_COMPARE_BACKENDS]
    reps = 1 if args.quick else 3
    if args.reps is not None:
        if not re.fullmatch(r'[1-9][0-9]*', args.reps) or int(args.reps) > 100:
            die_args('--reps must be a whole number from 1 to 100, not '
                     '\'%s\'' % args.reps)
        reps = int(args.reps)
    if os.geteuid() != 0:
        die_args('must run as root (drops the page cache, writes to the '
                 'stack\'s FUSE mount)')
    for tool in ('smbclient', 'stdbuf'):
        if not shutil.which(tool):
            die_args('%s not found (scripts/install-deps)' % tool)

    env = stack_env(platform)
    if 'gfapi' in backends:
        check_fio(env, platform)
    for b, key in ((BASE, 'BASELINE_SHARE'),
                   (BASE_WC, 'BASELINE_WCACHE_SHARE')):
        if b in backends and env.get(key) != b:
            die_args('the stack has no share %s: build one with '
                     'test/bench/baseline REV, then test/stack up --no-build '
                     '--baseline-module glusterfs2_base' % b)
    if args.clean:
        for p in (os.path.join(env['FUSE_MOUNT'], DATADIR),
                  os.path.join(env['LOCAL_DIR'], DATADIR)):
            if os.path.isdir(p):
                print('removing %s' % p)
                shutil.rmtree(p)
        return 0

    outdir = args.out or default_run_dir(
        'prefetch-compare' if args.prefetch_compare else 'run', platform)
    try:
        os.makedirs(outdir, exist_ok=True)
    except OSError as e:
        die_args('cannot create %s: %s' % (outdir, e))

    cfg = Config(args.quick, args.prefetch_compare)
    bench = Bench(args, cfg, env, outdir)
    ensure_built(bench.log, gfapi_exec(env), platform_root(env))
    group = None
    if args.volume_group is not None:
        group = VolumeGroup(bench.volume, args.volume_group)

    # every SMB share asked for must answer
    for s in backends:
        if s not in ALL_SMB_SHARES:
            continue
        res = bench.smbload('probe', s, '', timeout=120)
        if not res.get('ok'):
            die_args('share \'%s\' is not up on %s:%s: %s (test/stack up; '
                     'test/stack status)' % (s, bench.host, bench.port,
                                             res.get('error')))
    if 'gfapi' in backends:
        rc, out, err = bench.run_cmd(gluster_cmd(env) + [
            '--mode=script', 'volume', 'info', bench.volume], 60)
        if rc != 0 or 'Status: Started' not in out:
            die_args('volume %s is not started: %s' % (
                bench.volume, (err or out).strip()[-200:]))

    print('bench: %s, workloads %s, backends %s, %d rep(s); results in %s'
          % ('quick' if args.quick else 'prefetch-compare'
             if args.prefetch_compare else 'default', ','.join(workloads),
             ','.join(backends), reps, outdir), flush=True)
    os.environ['GLUSTERFS2_MODULE'] = env.get('GLUSTERFS2_MODULE', '')
    os.environ['GLUSTERFS2_MODULE_STATE'] = env.get('MODULE_STATE', '')
    os.environ['BASELINE_MODULE'] = env.get('BASELINE_MODULE', '') \
        if BASE in backends or BASE_WC in backends else ''
    meta = versions(env)
    rc, out, err = bench.run_cmd(gluster_cmd(env) + [
        '--mode=script', 'volume', 'info', bench.volume], 60)
    meta['volume_layout'] = volume_layout(out if rc == 0 else '')
    meta.update({
        'date': datetime.datetime.utcnow().strftime('%Y-%m-%d %H:%M UTC'),
        # (the start of the run)
        'command': 'test/bench/run ' + ' '.join(argv) if argv
        else 'test/bench/run',
        'reps': reps, 'quick': args.quick,
        'prefetch_compare': args.prefetch_compare,
        'workloads': workloads,
        'backends': backends, 'volume': bench.volume,
        'smb': '%s:%s' % (bench.host, bench.port),
        'volume_group': group.describe() if group else None,
    })
    interrupted = False
    try:
        if group is not None:
            group.apply()
            bench.say('bench: volume %s: applied %s for this run' % (
                bench.volume, group.describe()))
        bench.prepare(workloads, backends)
        bench.run_all(workloads, backends, reps)
    except KeyboardInterrupt:
        interrupted = True
        bench.say('interrupted: writing what was measured')
    finally:
        bench.cleanup_outputs()
        if group is not None:
            for e in group.restore():
                print('bench: WARNING: could not put volume option back: '
                      '%s' % e)
    meta['seconds'] = round(now() - bench.t_start, 1)
    end = versions()
    if end['module'] != meta['module']:
        meta['module_changed'] = end['module']
        print('bench: WARNING: the glusterfs2 module was replaced during '
              'the run (now %s): its figures mix two builds' % end['module'])
    if end['baseline'] != meta['baseline']:
        meta['baseline_changed'] = end['baseline']
        print('bench: WARNING: the baseline module was replaced during '
              'the run (now %s): its figures mix two builds' %
              end['baseline'])
    meta['volume_restarts'] = bench.restarts
    summary = summarize(bench.records, backends)
    for s in summary:
        for b in s['backends'].values():
            del b['values'], b['p50'], b['p99'], b['rss'], b['smbd_cpu'], \
                b['brick_cpu'], b['client_cpu']
    write_json(os.path.join(outdir, 'results.json'), meta, cfg.as_dict(),
               summary, bench.records)
    write_summary_json(os.path.join(outdir, 'summary.json'), meta,
                       cfg.as_dict(), summary)
    write_csv(os.path.join(outdir, 'results.csv'), bench.records)
    summary_full = summarize(bench.records, backends)
    png = write_chart(outdir, summary_full, backends, meta)
    meta['chart'] = png is not None
    write_markdown(os.path.join(outdir, 'results.md'), meta, summary_full,
                   backends, cfg.as_dict())
    failed = [r for r in bench.records if not r['ok']]
    print('bench: %d runs, %d failed, %.0f s; %s' % (
        len(bench.records), len(failed), meta['seconds'],
        os.path.join(outdir, 'results.md')))
    if png is None:
        print('bench: no chart (it needs gnuplot and the local share, '
              'the reference)')
    with open(os.path.join(outdir, 'results.md')) as f:
        md = f.read()
    m = re.search(r'## Summary \(medians\)\n\n(.*?)\n\n', md, re.S)
    if m:
        print(m.group(1))
    m = re.search(r'\*\*smbd CPU s/GiB\*\*\n\n(.*?)\n\n', md, re.S)
    if m:
        print('\nsmbd CPU seconds per GiB moved (lower is better):')
        print(m.group(1))
    m = re.search(r'## Prefetch off against the stock module\n\n[^\n]*\n\n'
                  r'(.*?)\n\n', md, re.S)
    if m:
        print('\nprefetch off (gf2-nopf) against the stock module:')
        print(m.group(1))
    if interrupted:
        return 130
    return 1 if failed else 0
