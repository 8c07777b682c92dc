"""The results: the summary of the records (medians, ratios) and the
files written from them: results.json, results.csv, summary.json,
results.md (the chart is chart.py's)."""

import csv
import json
import time

from .common import (ALL_BACKENDS, ALL_SMB_SHARES, BASE, BASE_WC, NOPF, SHORT,
                     WORKLOADS, median)


def fmt_value(v, unit):
    if v is None:
        return '-'
    if unit == 's':
        return '%.2f' % v if v < 10 else '%.1f' % v
    if v >= 100:
        return '%.0f' % v
    if v >= 10:
        return '%.1f' % v
    return '%.2f' % v


def fmt_us(us):
    if us is None or us == 0:
        return '-'
    if us >= 1000:
        return '%.1f ms' % (us / 1000.0) if us < 100000 else \
            '%.0f ms' % (us / 1000.0)
    return '%.0f µs' % us


def summarize(records, backends):
    """per variant: per backend median/min/max of the value, latency
    medians, runs ok"""
    order = []
    by = {}
    for r in records:
        key = r['variant']
        if key not in by:
            by[key] = {'variant': key, 'label': r['label'],
                       'workload': r['workload'], 'unit': r['unit'],
                       'metric': r['metric'],
                       'higher_is_better': r['higher_is_better'],
                       'backends': {}}
            order.append(key)
        b = by[key]['backends'].setdefault(r['backend'], {
            'values': [], 'p50': [], 'p99': [], 'runs': 0, 'ok': 0,
            'errors': [], 'rss': [], 'smbd_cpu': [], 'brick_cpu': [],
            'client_cpu': [], 'per_brick': {}})
        b['runs'] += 1
        if r['ok'] and r['value'] is not None:
            b['ok'] += 1
            b['values'].append(r['value'])
            if r.get('smbd_cpu_s_per_gib'):
                b['smbd_cpu'].append(r['smbd_cpu_s_per_gib'])
            if r.get('brick_cpu_s_per_gib'):
                b['brick_cpu'].append(r['brick_cpu_s_per_gib'])
            if r.get('client_cpu_s_per_gib'):
                b['client_cpu'].append(r['client_cpu_s_per_gib'])
            if r['lat_p50_us']:
                b['p50'].append(r['lat_p50_us'])
                b['p99'].append(r['lat_p99_us'])
            for lab, v in r['raw'].get('per_brick_mbps', {}).items():
                if r['metric'] == 'mbps':
                    b['per_brick'].setdefault(lab, []).append(v)
            if 'smbd_rss_mib' in r['raw'] and r['metric'] != 'smbd_rss_mib':
                b['rss'].append(r['raw']['smbd_rss_mib'])
        elif r['error']:
            b['errors'].append(r['error'])
    out = []
    for key in order:
        s = by[key]
        for name, b in s['backends'].items():
            b['median'] = median(b['values'])
            b['min'] = min(b['values']) if b['values'] else None
            b['max'] = max(b['values']) if b['values'] else None
            b['p50_median_us'] = median(b['p50'])
            b['p99_median_us'] = median(b['p99'])
            b['rss_median_mib'] = median(b['rss'])
            b['smbd_cpu_median'] = median(b['smbd_cpu'])
            b['brick_cpu_median'] = median(b['brick_cpu'])
            b['client_cpu_median'] = median(b.get('client_cpu', []))
            b['checked'] = b['ok'] == b['runs'] and b['runs'] > 0
            # rows over every brick: each brick's median, the slowest
            pb = {lab: median(v) for lab, v in b['per_brick'].items()}
            b['per_brick_median'] = pb
            if pb:
                slow = min(pb, key=pb.get)
                b['slowest_brick'] = slow
                b['slowest_brick_median'] = pb[slow]
                b['slowest_over_fastest'] = pb[slow] / max(pb.values())
        # ratios_by[A][B] > 1: A is better than B (faster; fewer seconds or
        # MiB); cpu_ratios_by[A][B] > 1: A's smbd uses less CPU per GiB
        s['ratios_by'] = {}
        s['cpu_ratios_by'] = {}
        for a, bb in RATIO_PAIRS:
            x = s['backends'].get(a, {}).get('median')
            y = s['backends'].get(bb, {}).get('median')
            if x and y:
                s['ratios_by'].setdefault(a, {})[bb] = (
                    x / y if s['higher_is_better'] else y / x)
            x = s['backends'].get(a, {}).get('smbd_cpu_median')
            y = s['backends'].get(bb, {}).get('smbd_cpu_median')
            if x and y:
                s['cpu_ratios_by'].setdefault(a, {})[bb] = y / x
        # (as before: glusterfs2 against the others)
        s['ratios'] = s['ratios_by'].get('glusterfs2', {})
        out.append(s)
    return out


# (A, B) ratio columns, shown when both backends ran: A's figure against B's
RATIO_PAIRS = [('glusterfs2', 'glusterfs'), ('glusterfs2', 'fuse'),
               ('glusterfs2', 'local'), (NOPF, 'glusterfs'),
               ('glusterfs2', NOPF), ('glusterfs2', BASE),
               ('glusterfs2-wcache', 'glusterfs'),
               ('glusterfs2-wcache', BASE_WC)]


def ratio_name(a, b):
    n = {'glusterfs2': 'g2'}
    n.update(SHORT)
    return '%s/%s' % (n.get(a, a), n.get(b, b))


def ratio_cols(backends):
    return [(a, b) for a, b in RATIO_PAIRS if a in backends and b in backends]


def fmt_ratio(x):
    return '-' if x is None else '%.2f×' % x


BACKEND_TITLES = {'local': 'local', 'fuse': 'fuse', 'glusterfs':
                  'glusterfs (stock)', 'glusterfs2': 'glusterfs2',
                  NOPF: 'glusterfs2, prefetch off (gf2-nopf)',
                  BASE: 'glusterfs2-base, baseline build (gf2-base)',
                  'glusterfs2-wcache': 'glusterfs2, write cache on (gf2-wc)',
                  BASE_WC: 'glusterfs2-base, baseline build, write cache on '
                  '(gf2-base-wc)',
                  'gfapi': 'gfapi (raw)'}


def cell(b, unit):
    if b is None:
        return '-'
    if not b['checked']:
        return 'FAILED'
    return fmt_value(b['median'], unit)


def fmt_cpu(v):
    if v is None:
        return '-'
    return '%.1f' % v if v >= 10 else '%.2f' % v


def own_cpu_key(backend):
    """the column of the smbd CPU table a backend fills: raw gfapi's is
    the CPU of its client process (fio), which does smbd's gluster work"""
    return 'client_cpu_median' if backend == 'gfapi' else 'smbd_cpu_median'


def cpu_cell(b, key):
    if b is None or not b['checked']:
        return '-'
    return fmt_cpu(b.get(key))


def write_markdown(path, meta, summary, backends, cfg):
    L = []
    L.append('# glusterfs2 benchmark, %s' % meta['date'])
    L.append('')
    if meta.get('platform'):
        where = ('smbd, glusterd and bricks in test platform %s (its own '
                 'root and network namespace, test/stack --platform %s), '
                 'clients on this machine through a veth pair' %
                 (meta['platform'], meta['platform']))
    else:
        where = 'smbd and clients on loopback'
    L.append('Machine: %s, %d cores, %s GiB RAM, %s, kernel %s; Samba %s, '
             'GlusterFS %s; volume %s (%s, bricks on the '
             'local disk), %s.' % (
                 meta['host'], meta['cores'], meta['mem_gib'], meta['os'],
                 meta['kernel'], meta['samba'], meta['gluster'],
                 meta['volume'],
                 meta.get('volume_layout') or '2-brick distribute', where))
    L.append('')
    L.append('Volume options: %s.' % (
        'gluster\'s defaults plus server.allow-insecure=on, with ' +
        meta['volume_group'] + ' applied for the run'
        if meta.get('volume_group') else
        'gluster\'s defaults plus server.allow-insecure=on (no option '
        'group)'))
    L.append('')
    L.append('glusterfs2: git %s; module %s.' % (meta['git'],
                                                  meta['module']))
    if meta.get('module_changed'):
        L.append('')
        L.append('**WARNING: the module was replaced during the run (at the '
                 'end: %s); the glusterfs2 figures mix two builds.**' %
                 meta['module_changed'])
    if meta.get('baseline'):
        L.append('')
        L.append('glusterfs2-base: %s.' % meta['baseline'])
    if meta.get('baseline_changed'):
        L.append('')
        L.append('**WARNING: the baseline module was replaced during the run '
                 '(at the end: %s); the glusterfs2-base figures mix two '
                 'builds.**' % meta['baseline_changed'])
    L.append('')
    L.append('Command: `%s`; %d repetition(s) per backend, interleaved '
             '(workload-major, backend-minor, order rotated each '
             'repetition); run time %s.' % (
                 meta['command'], meta['reps'],
                 time.strftime('%M min %S s', time.gmtime(meta['seconds']))))
    if meta.get('volume_restarts'):
        L.append('The volume was restarted %d time(s) between runs (untimed) '
                 'because a brick was down or held more than half the '
                 'descriptors it may open (the stock module leaks one per '
                 'directory open): %s.' % (
                     len(meta['volume_restarts']), '; '.join(
                         'before run %d: %s' % (r['run'], r['why'])
                         for r in meta['volume_restarts'])))
        L.append('')
    rcols = ratio_cols(backends)
    L.append('Each figure is the median of the repetitions; every run '
             'checked what it read (see "How" below). A ratio column A/B '
             'compares backend A with backend B so that above 1 means A is '
             'better: its figure over theirs for speeds, theirs over its '
             'for seconds, MiB and CPU time (g2 = glusterfs2, gf2-nopf = '
             'glusterfs2-noprefetch, the same module with '
             '`glusterfs2:prefetch = no`%s). '
             'FAILED: a run of that backend failed its check '
             '(results.json has the error).' % (
                 ', gf2-base = glusterfs2-base, the baseline build of the '
                 'module on the same volume' if BASE in backends else ''))
    L.append('')
    L.append('## Summary (medians)')
    L.append('')
    cols = [b for b in ALL_BACKENDS if b in backends]
    L.append('| workload | unit | ' + ' | '.join(BACKEND_TITLES[b]
                                                for b in cols) +
             ''.join(' | ' + ratio_name(a, b) for a, b in rcols) + ' |')
    L.append('| --- | --- |' + ' ---: |' * (len(cols) + len(rcols)))
    for s in summary:
        row = [s['label'], s['unit']]
        for b in cols:
            row.append(cell(s['backends'].get(b), s['unit']))
        for a, b in rcols:
            row.append(fmt_ratio(s['ratios_by'].get(a, {}).get(b)))
        L.append('| ' + ' | '.join(row) + ' |')
    L.append('')
    if meta.get('chart'):
        L.append('![chart](chart.png)')
        L.append('')

    # CPU time per GiB moved
    cpu_rows = [s for s in summary if any(
        b.get('smbd_cpu_median') or b.get('brick_cpu_median') or
        b.get('client_cpu_median')
        for b in s['backends'].values())]
    if cpu_rows:
        ccols = [b for b in cols if b in ALL_SMB_SHARES or b == 'gfapi']
        L.append('## CPU seconds per GiB moved (medians, lower is better)')
        L.append('')
        L.append('CPU time (user + system, all threads) over each run\'s '
                 'timed window, divided by the GiB the run moved. smbd: the '
                 'smbd processes serving the run\'s own connections (one '
                 'per client; identified by their TCP peers, so other '
                 'sessions on the shared stack are not counted). Bricks: '
                 'the volume\'s glusterfsd processes, which serve whatever '
                 'else uses the volume at the time too. fuse: the FUSE '
                 'client\'s CPU is in neither figure. The ratio columns '
                 'compare smbd CPU (above 1: A uses less). gfapi (raw), '
                 'reads only: the CPU of the fio process reading through '
                 'libgfapi (gfapi\'s threads included, and fio\'s crc32c '
                 'check of every block), the gluster client work of an '
                 'smbd without SMB.')
        L.append('')
        L.append('**smbd CPU s/GiB**')
        L.append('')
        L.append('| workload | ' + ' | '.join(BACKEND_TITLES[b]
                                             for b in ccols) +
                 ''.join(' | ' + ratio_name(a, b) for a, b in rcols) + ' |')
        L.append('| --- |' + ' ---: |' * (len(ccols) + len(rcols)))
        for s in cpu_rows:
            row = [s['label']]
            for b in ccols:
                row.append(cpu_cell(s['backends'].get(b), own_cpu_key(b)))
            for a, b in rcols:
                row.append(fmt_ratio(s['cpu_ratios_by'].get(a, {}).get(b)))
            L.append('| ' + ' | '.join(row) + ' |')
        bcols = [b for b in ccols if b != 'local']
        if bcols:
            L.append('')
            L.append('**brick (glusterfsd) CPU s/GiB**')
            L.append('')
            L.append('| workload | ' + ' | '.join(BACKEND_TITLES[b]
                                                 for b in bcols) + ' |')
            L.append('| --- |' + ' ---: |' * len(bcols))
            for s in cpu_rows:
                row = [s['label']]
                for b in bcols:
                    row.append(cpu_cell(s['backends'].get(b),
                                        'brick_cpu_median'))
                L.append('| ' + ' | '.join(row) + ' |')
        L.append('')

    if meta.get('prefetch_compare'):
        L += prefetch_compare_section(summary, backends)

    L.append('## Per workload')
    desc = dict(WORKLOADS)
    last_w = None
    for s in summary:
        if s['workload'] != last_w:
            last_w = s['workload']
            L.append('')
            L.append('### %s' % s['workload'])
            L.append('')
            L.append('How: ' + desc[s['workload']])
        L.append('')
        L.append('**%s** (%s, %s is better)' % (
            s['label'], s['unit'],
            'higher' if s['higher_is_better'] else 'lower'))
        L.append('')
        has_lat = any(b['p50'] for b in s['backends'].values())
        has_rss = any(b['rss'] for b in s['backends'].values())
        has_cpu = any(b['smbd_cpu'] or b['brick_cpu'] or
                      b.get('client_cpu')
                      for b in s['backends'].values())
        hdr = '| backend | median | min-max | runs ok |'
        sep = '| --- | ---: | ---: | ---: |'
        if has_lat:
            hdr += ' latency p50 | latency p99 |'
            sep += ' ---: | ---: |'
        if has_rss:
            hdr += ' smbd RSS (all clients) |'
            sep += ' ---: |'
        if has_cpu:
            hdr += ' smbd CPU s/GiB | brick CPU s/GiB |'
            sep += ' ---: | ---: |'
        L.append(hdr)
        L.append(sep)
        for b in cols:
            d = s['backends'].get(b)
            if d is None:
                continue
            row = [BACKEND_TITLES[b], cell(d, s['unit']),
                   '%s-%s' % (fmt_value(d['min'], s['unit']),
                              fmt_value(d['max'], s['unit']))
                   if d['values'] else '-',
                   '%d/%d' % (d['ok'], d['runs'])]
            if has_lat:
                row += [fmt_us(d['p50_median_us']),
                        fmt_us(d['p99_median_us'])]
            if has_rss:
                row.append('%.0f MiB' % d['rss_median_mib']
                           if d['rss_median_mib'] else '-')
            if has_cpu:
                row += [cpu_cell(d, own_cpu_key(b)),
                        cpu_cell(d, 'brick_cpu_median')]
            L.append('| ' + ' | '.join(row) + ' |')
        pairs = [(a, b) for a, b in rcols
                 if b in s['ratios_by'].get(a, {})]
        if pairs:
            L.append('')
            L.append('Ratios (above 1: the first is better): ' + ', '.join(
                '%s %s' % (ratio_name(a, b),
                           fmt_ratio(s['ratios_by'][a][b]))
                for a, b in pairs) + '.')
        pairs = [(a, b) for a, b in rcols
                 if b in s['cpu_ratios_by'].get(a, {})]
        if pairs:
            L.append('smbd CPU per GiB (above 1: the first uses less): ' +
                     ', '.join('%s %s' % (ratio_name(a, b), fmt_ratio(
                         s['cpu_ratios_by'][a][b])) for a, b in pairs) + '.')
        errs = [(b, e) for b in cols for e in
                s['backends'].get(b, {}).get('errors', [])]
        for b, e in errs[:4]:
            L.append('')
            L.append('- %s failed: %s' % (b, e))
    L += per_brick_section(summary, backends)
    L.append('')
    L.append('## Sizes')
    L.append('')
    L.append('```')
    for k, v in sorted(cfg.items()):
        L.append('%s = %s' % (k, v))
    L.append('```')
    with open(path, 'w') as f:
        f.write('\n'.join(L) + '\n')


def per_brick_section(summary, backends):
    """Rows written to one name per brick (replica set): each brick's
    median, the median over bricks (the row's figure) and the slowest
    brick, with its ratio to the fastest."""
    rows = []
    labels = []
    for s in summary:
        for b in backends:
            pb = s['backends'].get(b, {}).get('per_brick_median')
            if pb:
                labels += [lab for lab in pb if lab not in labels]
                rows.append((s, b, pb))
    if not rows:
        return []
    L = ['', '## Per brick', '',
         'Rows over every brick (every replica set): each pipewrite '
         'repetition put one file to a name on every brick (the row\'s '
         'figure above is the median over the bricks); leaseread read and '
         'leasewrite wrote a file on another brick at each repetition, in '
         'turn.  MB/s, '
         'each brick\'s median over the repetitions.', '',
         '| row | backend | %s | median over bricks | slowest brick | '
         'slowest / fastest |' % ' | '.join(labels),
         '| --- | --- |%s ---: | --- | ---: |' % (' ---: |' * len(labels))]
    for s, b, pb in rows:
        bb = s['backends'][b]
        L.append('| %s | %s | %s | %.0f | %s | %.2f |' % (
            s['variant'], b, ' | '.join('%.0f' % pb[lab] if lab in pb
                                        else '-' for lab in labels),
            median(list(pb.values())), bb['slowest_brick'],
            bb['slowest_over_fastest']))
    return L


def prefetch_compare_section(summary, backends):
    """--prefetch-compare, row by row: glusterfs2 with prefetch off at
    least as fast as the stock module, its smbd CPU per GiB at most the
    stock module's (glusterfs2 with prefetch on is in the summary)."""
    L = ['## Prefetch off against the stock module',
         '',
         'Requirement: with prefetch off, every row at least as fast as '
         'the stock glusterfs share, and smbd CPU seconds per GiB moved at '
         'most the stock module\'s. Medians of this run; "yes"/"no" '
         'compare the medians only (see the min-max spreads below before '
         'reading much into a few per cent).',
         '',
         '| workload | unit | glusterfs (stock) | gf2-nopf | gf2-nopf/'
         'glusterfs | at least as fast | smbd CPU s/GiB stock | gf2-nopf | '
         'at most stock |',
         '| --- | --- | ---: | ---: | ---: | :---: | ---: | ---: | :---: |']
    if NOPF not in backends or 'glusterfs' not in backends:
        return L[:2] + ['(not run: needs the glusterfs and ' + NOPF +
                        ' backends)', '']
    for s in summary:
        st = s['backends'].get('glusterfs')
        nf = s['backends'].get(NOPF)
        if st is None or nf is None:
            continue
        r = s['ratios_by'].get(NOPF, {}).get('glusterfs')
        ok = '-' if r is None or not (st['checked'] and nf['checked']) \
            else ('yes' if r >= 1 else 'no')
        cs, cn = st.get('smbd_cpu_median'), nf.get('smbd_cpu_median')
        cok = '-' if not cs or not cn else ('yes' if cn <= cs else 'no')
        L.append('| ' + ' | '.join([
            s['label'], s['unit'], cell(st, s['unit']), cell(nf, s['unit']),
            fmt_ratio(r), ok, fmt_cpu(cs), fmt_cpu(cn), cok]) + ' |')
    L.append('')
    return L


def write_json(path, meta, cfg, summary, records):
    with open(path, 'w') as f:
        json.dump({'meta': meta, 'config': cfg, 'summary': summary,
                   'runs': records}, f, indent=1)


def write_summary_json(path, meta, cfg, summary):
    """results.json without the per-sample runs: what a committed run keeps
    once its raw data is pruned (docs/hacking.md, "Results")."""
    with open(path, 'w') as f:
        json.dump({'meta': meta, 'config': cfg, 'summary': summary}, f,
                  indent=1)
        f.write('\n')


def write_csv(path, records):
    with open(path, 'w', newline='') as f:
        w = csv.writer(f)
        w.writerow(['workload', 'variant', 'backend', 'rep', 'ok', 'metric',
                    'unit', 'value', 'lat_p50_us', 'lat_p99_us',
                    'checked_bytes', 'error', 'smbd_cpu_s_per_gib',
                    'brick_cpu_s_per_gib', 'slowest_brick',
                    'slowest_brick_value'])
        for r in records:
            w.writerow([r['workload'], r['variant'], r['backend'], r['rep'],
                        int(r['ok']), r['metric'], r['unit'], r['value'],
                        r['lat_p50_us'], r['lat_p99_us'], r['checked_bytes'],
                        r['error'] or '', r['smbd_cpu_s_per_gib'],
                        r['brick_cpu_s_per_gib'],
                        r['raw'].get('slowest_brick', ''),
                        r['raw'].get('slowest_mbps', '')])
