"""Names, sizes and small helpers that every part of the benchmark uses:
the backends (shares of the stack, raw gfapi), the workloads and what
each does, units, argument errors."""

import os
import statistics
import subprocess
import sys
import time

# the checkout's top directory (this file is test/bench/lib/common.py)
TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
# the load generators (test/bench/*.c), built by lib/build.py
BIN = os.path.join(TOP, 'build', 'test', 'bench')
# committed runs, one folder each (KIND-PLATFORM-COMMIT); test/bench holds
# the tools only (docs/hacking.md, "Results"; test/docs/test_results_budget.py)
RESULTS = os.path.join(TOP, 'results')

SMB_SHARES = ['local', 'fuse', 'glusterfs', 'glusterfs2']
BACKENDS = SMB_SHARES + ['gfapi']       # the default set
NOPF = 'glusterfs2-noprefetch'          # only when asked for
# a baseline build of the module (test/bench/baseline REV, then
# test/stack up --baseline-module glusterfs2_base); only when asked for
BASE = 'glusterfs2-base'
WC = 'glusterfs2-wcache'                # write cache on; only when asked for
BASE_WC = 'glusterfs2-base-wcache'      # the baseline build, write cache on
ALL_SMB_SHARES = SMB_SHARES + [NOPF, BASE, WC, BASE_WC]
ALL_BACKENDS = ALL_SMB_SHARES + ['gfapi']
SHARE_ALIASES = {'gf2-nopf': NOPF, 'gf2-base': BASE, 'gf2-wc': WC,
                 'gf2-base-wc': BASE_WC}
SHORT = {NOPF: 'gf2-nopf', BASE: 'gf2-base', WC: 'gf2-wc',
         BASE_WC: 'gf2-base-wc'}  # in progress lines and ratio
#                                               names
# --prefetch-compare: the module with and without prefetch against the
# stock module, side by side
PREFETCH_COMPARE_WORKLOADS = ['seqread', 'randread', 'seqwrite']
PREFETCH_COMPARE_BACKENDS = ['glusterfs', 'glusterfs2', NOPF]
# runs whose smbd (and brick) CPU time per GiB moved is measured
CPU_WORKLOADS = {'seqread', 'pipelined', 'randread', 'multiclient',
                 'seqwrite', 'pipewrite', 'leaseread', 'leasewrite'}
DATADIR = 'gf2bench'          # directory of the benchmark files
PW_SEED = 6000                # the pattern of pipewrite's source file
LR_SEED = 8000                # smb2q's pattern of leaseread's file
CPU_LINGER = 0.25             # s a client stays connected after its timed
#                               part: CPU samples after t_end (CpuSampler)

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

# What a run of each workload does (the markdown repeats these).
WORKLOADS = [
    ('seqread',
     'Sequential read of one file, one request in flight: a libsmbclient '
     'synchronous read loop (like dd on a mounted share), every byte '
     'checked. "warm": the file is in the bricks\' (and local disk\'s) page '
     'cache; "cold": `sync; echo 3 > /proc/sys/vm/drop_caches` before the '
     'run. Each run stops after seq_cap seconds (see Sizes). gfapi: fio, '
     'gfapi engine (synchronous), crc32c-verified, with glfs_fini stubbed '
     'out (it takes ~10 s after the measured part; test/bench/nofini.c).'),
    ('leaseread',
     'Sequential read of one file as clients that take a lease read it: '
     'test/tools/smb2q opens it under an RWH lease and keeps exactly N '
     'requests of S bytes in flight (the profiles 64 KiB x 1, 64 KiB x 8, '
     '1 MiB x 4, 1 MiB x 16, 4 MiB x 4: S x N), reading lease_size bytes; '
     'every byte checked against smb2q\'s pattern; timed from the first '
     'READ to the last response. On the volume one such file per brick '
     '(replica set), another brick\'s at each repetition, in turn '
     '(results.md\'s Per brick section). "warm" and "cold" as for '
     'seqread. gfapi: '
     'the ceiling, fio\'s gfapi_async engine at the same request size and '
     'depth on its own crc32c-verified file.'),
    ('pipelined',
     'Sequential read with several requests in flight: `smbclient -c get` '
     '(its reads are pipelined; libsmbclient has no asynchronous API) into '
     'a FIFO read by a checker; timed from the first byte to the last.'),
    ('randread',
     'Random 4 KiB reads over the big file (warm). Depth 1: one client, one '
     'request at a time. Depth 8: 8 client processes, each with its own '
     'connection to the same file, one request each. gfapi: fio gfapi '
     '(depth 1) and gfapi_async with iodepth 8.'),
    ('multiclient',
     '16 clients at once, each its own connection reading its own file '
     'sequentially, one 64 KiB request at a time (warm); aggregate MB/s, and '
     'the peak total RSS of the 16 smbd processes serving them.'),
    ('smallread',
     'Small-file reads under concurrency (the web-server case): 16 clients '
     'each opening, reading (4 KiB) and closing random files of a set; '
     'requests per second, latency of one open+read+close.'),
    ('seqwrite',
     'Sequential write of one file (created/truncated), one request in '
     'flight, libsmbclient, for at most write_cap seconds; close included; '
     'then 1024 random 4 KiB blocks '
     'plus the first and last are read back and checked, and the size. '
     'gfapi: fio gfapi, read back and crc32c-verified by fio.'),
    ('pipewrite',
     'Sequential write with several requests in flight (copying a file '
     'onto the share): `smbclient` `put` of a pattern file in /dev/shm '
     '(made once per run, the size of the pipelined read), as two rows: to '
     'a new name, and over an existing file of the same size (written '
     'through the backend\'s own path before the put, untimed); on the '
     'volume one file per brick (per replica set), its name chosen '
     'through the FUSE mount\'s trusted.glusterfs.pathinfo, put one '
     'after the other in one smbclient session, the row\'s figure the '
     'median over the bricks and results.md\'s Per brick section each '
     'brick\'s figure and the slowest brick '
     '(smbclient keeps a 16 MiB window of writes of the server\'s maximum '
     'size in flight: two of 8 MiB with smbd\'s default); '
     'timed from the start of the put to its end, close included (marks '
     'from smbclient\'s `!` command around it, so session setup is not '
     'counted). The written file is then read back through the backend\'s '
     'own path (the FUSE mount for the gluster shares, the local directory '
     'for local), checked byte for byte, and deleted. No gfapi '
     'equivalent.'),
    ('leasewrite',
     'Sequential write of one file (created/truncated) under an RWH lease: '
     'test/tools/smb2q --lease with the read profiles of leaseread (and '
     '1 MiB x 1), lease_size bytes, timed from the first WRITE to the '
     'last response (CLOSE not included; the lease holder\'s queued '
     'writes reach the bricks by the CLOSE); the no-lease counterpart is '
     'seqwrite. The file is then checked through the backend\'s own path '
     '(sha256 against smb2q\'s). On the volume the file\'s name lands '
     'on another brick (replica set) at each repetition, in turn '
     '(results.md\'s Per brick section). Shows the write cache on gf2-wc '
     '(glusterfs2:write cache = yes); every other share just holds the '
     'lease. No gfapi equivalent.'),
    ('manywriters',
     'Many writers at once: 16 clients, each its own connection writing '
     '8 KiB blocks sequentially into its own file (wrapping at a region), '
     'one request in flight each; aggregate IOPS and per-request latency; '
     'each file is read back whole and checked afterwards.'),
    ('smallfiles',
     'Small files through smbclient (the rsync/delete case): mput, ls, ls '
     'again (a client refreshing its view), mget and deltree of a '
     'directory of 4 KiB files in one smbclient session, '
     'seconds per step (session setup and teardown not counted); ls must '
     'list every file, mget\'s copies are checked byte for byte and the '
     'directory must be gone.  gfapi: test/bench/mdfloor, the same steps '
     'through libgfapi with only the Gluster calls any SMB server on gfapi '
     'must make (lookup, create, DOS attribute xattr, write, close; '
     'readdirplus and each entry\'s xattr list for smbd\'s EA size, by '
     '8 threads, for ls, mget and deltree; open, read, close; unlink): the '
     'floor under what a module can reach on this volume.'),
]
WORKLOAD_NAMES = [w[0] for w in WORKLOADS]
# the timed steps of the smallfiles workload, in order
SF_STEPS = ('create', 'list', 'relist', 'read', 'delete')
SF_STEP_LABELS = {'relist': 'list again'}


class BadArgs(Exception):
    pass


def die_args(msg):
    print('bench: %s' % msg, file=sys.stderr)
    sys.exit(2)


def human_size(n):
    if n % GiB == 0:
        return '%d GiB' % (n // GiB)
    if n % MiB == 0:
        return '%d MiB' % (n // MiB)
    return '%d KiB' % (n // KiB)


def size_tag(n):
    return '%dm' % (n // MiB) if n >= MiB else '%dk' % (n // KiB)


def now():
    return time.monotonic()


def median(xs):
    return statistics.median(xs) if xs else None


def host_platform():
    """This machine's platform name, as the runs are named: the codename
    of /etc/os-release (bookworm), or 'host' when it has none."""
    try:
        with open('/etc/os-release') as f:
            for line in f:
                key, _, value = line.strip().partition('=')
                if key == 'VERSION_CODENAME' and value.strip('"'):
                    return value.strip('"')
    except OSError:
        pass
    return 'host'


def default_run_dir(kind, platform=None):
    """results/KIND-PLATFORM-COMMIT (PLATFORM: the --platform given, else
    this machine's), with -2, -3... after it when that folder is taken, so
    that a run never writes over another.  COMMIT is HEAD's short hash
    (the report names the module it measured and how it was built)."""
    p = subprocess.run(['git', '-C', TOP, 'rev-parse', '--short=7', 'HEAD'],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       universal_newlines=True)
    commit = p.stdout.strip() if p.returncode == 0 else 'nogit'
    base = os.path.join(RESULTS, '%s-%s-%s' % (
        kind, platform or host_platform(), commit))
    path, n = base, 1
    while os.path.exists(path):
        n += 1
        path = '%s-%d' % (base, n)
    return path
