"""chart.png: each workload's median per backend relative to the local
share (gnuplot)."""

import os
import re
import shutil
import subprocess
import sys

from .common import BASE, NOPF
from .report import BACKEND_TITLES


def write_chart(outdir, summary, backends, meta):
    """gnuplot: each workload's speed relative to the local share"""
    cols = [b for b in ('fuse', 'glusterfs', 'glusterfs2', NOPF, BASE,
                        'gfapi')
            if b in backends]
    if 'local' not in backends or not cols or not shutil.which('gnuplot'):
        return None
    dat = os.path.join(outdir, 'chart.dat')
    n = 0
    with open(dat, 'w') as f:
        f.write('# workload ' + ' '.join(cols) +
                '  (speed relative to local)\n')
        for s in summary:
            loc = s['backends'].get('local', {}).get('median')
            if not loc:
                continue
            vals = []
            for b in cols:
                m = s['backends'].get(b, {}).get('median')
                if m and s['backends'][b]['checked']:
                    vals.append('%.4f' % (m / loc if s['higher_is_better']
                                          else loc / m))
                else:
                    vals.append('?')
            label = s['label'].replace('"', "'")
            if label.startswith('seq'):
                label = label.replace(', 1 in flight', '')
            label = label.replace(' (open+read 4 KiB+close)', '')
            label = label.replace(' (smbclient)', '')
            label = re.sub(r'^(\d+) files of 4 KiB: ', r'\1 x 4 KiB files: ',
                           label)
            label = label.replace(', own file each, 64 KiB reads', ' reading')
            label = label.replace(': RSS of their smbd processes',
                                  ': smbd RSS')
            label = label.replace('random 4 KiB reads', 'random 4 KiB')
            f.write('"%s" %s\n' % (label, ' '.join(vals)))
            n += 1
    if n == 0:
        return None
    png = os.path.join(outdir, 'chart.png')
    colors = {'fuse': '#4daf4a', 'glusterfs': '#e41a1c',
              'glusterfs2': '#377eb8', NOPF: '#984ea3', BASE: '#ff7f00',
              'gfapi': '#999999'}
    plots = []
    for i, b in enumerate(cols):
        plots.append("'%s' using %d%s title '%s' lc rgb '%s'" % (
            dat if i == 0 else '', i + 2, ':xtic(1)' if i == 0 else '',
            BACKEND_TITLES[b], colors[b]))
    gp = '\n'.join([
        'set terminal pngcairo size %d,760 font "DejaVu Sans,10"' %
        max(1000, 60 * n + 200),
        "set output '%s'" % png,
        'set datafile missing "?"',
        'set style data histogram',
        'set style histogram clustered gap 1',
        'set style fill solid 0.85 border -1',
        'set boxwidth 0.9',
        'set logscale y 10',
        'set yrange [0.005:20]',
        'set ytics ("0.01" 0.01, "0.03" 0.03, "0.1" 0.1, "0.3" 0.3, '
        '"1" 1, "3" 3, "10" 10)',
        'set grid ytics',
        'set xtics rotate by 35 right scale 0 font ",9"',
        'set bmargin 12',
        'set key top left horizontal',
        'set ylabel "relative to the local share, higher is better '
        '(log scale; seconds and MiB inverted)" font ",9"',
        'set title "glusterfs2 benchmark: each backend\'s median relative '
        'to the local share = 1\\n%s, %s cores, %s, loopback"' % (
            meta['date'], meta['cores'], meta['os'].replace('"', '')),
        'set arrow from graph 0, first 1 to graph 1, first 1 nohead '
        'lc rgb "black" lw 1.5',
        'plot ' + ', '.join(plots),
    ])
    with open(os.path.join(outdir, 'chart.gp'), 'w') as f:
        f.write(gp + '\n')
    p = subprocess.run(['gnuplot', os.path.join(outdir, 'chart.gp')],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    if p.returncode != 0:
        print('bench: gnuplot failed: %s' % p.stdout[-500:], file=sys.stderr)
        return None
    return png
