"""test/bench/hotfile run tiny against the stack that is up: 2 readers of
an 8 MiB file on every share, warm and cold, one round.  Every reader must
have read the whole file through its own smbd under a lease, with the
SHA-256 of the pattern the file was written with (computed here, apart
from the benchmark); every run must have an aggregate MB/s and the smbd
CPU of exactly its 2 serving smbds, the gluster shares a brick figure and
the fuse share its FUSE client's.  No speed is asserted."""

import hashlib
import json
import os
import subprocess
import sys

from conftest import TOP

sys.path.insert(0, os.path.join(TOP, 'test', 'tools'))
import smb2q  # noqa: E402

HOTFILE = os.path.join(TOP, 'test', 'bench', 'hotfile')
SHARES = ['local', 'fuse', 'glusterfs', 'glusterfs2']
SIZE = 8 << 20
READERS = 2
SEED = 9000                 # test/bench/hotfile's HOT_SEED


def pattern_sha256(size):
    pat = smb2q.Pattern(SEED)
    h = hashlib.sha256()
    for off in range(0, size, 1 << 20):
        h.update(pat.generate(off, min(1 << 20, size - off)))
    return h.hexdigest()


def test_hotfile_tiny(stack, tmp_path):
    out = tmp_path / 'hot'
    p = subprocess.run([HOTFILE, '--readers', str(READERS), '--size', '8M',
                        '--rounds', '1', '--cache', 'warm,cold',
                        '--out', str(out)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=600)
    print(p.stdout)
    assert p.returncode == 0, p.stdout[-3000:]
    want = pattern_sha256(SIZE)
    with open(out / 'summary.json') as f:
        summary = json.load(f)
    assert summary['meta']['file_sha256'] == want
    cells = summary['cells']
    assert sorted((c['cache'], c['share']) for c in cells) == sorted(
        (c, s) for c in ('warm', 'cold') for s in SHARES)
    for c in cells:
        assert c['runs'] == 1 and c['ok'] == 1, c
        assert c['readers_checked'] == READERS, c
        assert c['mbps_median'] and c['mbps_median'] > 0, c
        assert c['smbd_cpu_s_per_gib'] and c['smbd_cpu_s_per_gib'] > 0, c
        if c['share'] != 'local':
            assert c['brick_cpu_s_per_gib'] is not None, c
            assert c['brick_read_ratio'] is not None, c
        if c['share'] in ('glusterfs', 'glusterfs2') and c['cache'] == 'cold':
            # each reader's smbd read the file from a brick
            assert c['brick_read_ratio'] >= 0.9, c
        if c['share'] == 'fuse':
            assert c['fuse_cpu_s_per_gib'] is not None, c
        # every reader was granted a lease that caches reads
        assert c['granted'] and all(
            g.startswith('lease R') for g in c['granted']), c
    with open(out / 'samples.json') as f:
        runs = json.load(f)['runs']
    assert len(runs) == 2 * len(SHARES)
    for r in runs:
        assert r['ok'], r
        readers = r['reader_results']
        assert len(readers) == READERS
        for x in readers:
            assert x['ok'] and x['sha256'] == want, x
            assert x['max_outstanding'] == 4, x
        # each reader its own connection, so its own smbd
        pids = {x['server_pid'] for x in readers}
        assert len(pids) == READERS and None not in pids, readers
        assert r['cpu']['smbd_procs'] == READERS, r['cpu']
        assert r['window_s'] > 0
        # aggregate: every reader's bytes over the window (rounded)
        assert abs(r['mbps'] - READERS * SIZE / r['window_s'] / 1e6) < \
            0.01 * r['mbps'] + 0.5, r
    with open(out / 'results.md') as f:
        md = f.read()
    assert 'Command: `test/bench/hotfile' in md
    assert 'Commit measured:' in md
    for cache in ('warm', 'cold'):
        assert '## %s, %d readers' % (cache, READERS) in md
    for s in SHARES:
        assert '| %s | ' % s in md


def test_hotfile_bad_arguments(stack, tmp_path):
    for args in (['--readers', '0'], ['--readers', 'x'], ['--size', '0'],
                 ['--cache', 'hot'], ['--shares', 'nfs'], ['--depth', '0']):
        p = subprocess.run([HOTFILE] + args + ['--out', str(tmp_path)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=120)
        assert p.returncode == 2, (args, p.stdout)
        assert 'bench:' in p.stdout, (args, p.stdout)
