"""The driver: the runs of every workload on every backend,
workload-major, backend-minor, the backend order rotated each
repetition; each run's CPU window and its record."""

import json
import os
import socket
import tempfile
import traceback

from .clients import Clients
from .common import (ALL_SMB_SHARES, CPU_WORKLOADS, GiB, SF_STEPS,
                     SF_STEP_LABELS, SHORT, WORKLOAD_NAMES, now)
from .cpu import CpuSampler
from .data import Data
from .report import fmt_us, fmt_value
from .stack import gfapi_exec, platform_root, smbd_main_pid
from .workloads import Workloads


class Bench(Clients, Data, Workloads):
    """One benchmark run: its configuration, the stack, the records."""

    def __init__(self, args, cfg, env, outdir):
        self.args = args
        self.cfg = cfg
        self.env = env
        self.out = outdir
        self.log = open(os.path.join(outdir, 'log.txt'), 'w')
        self.tmp = tempfile.mkdtemp(prefix='gf2bench.')
        self.shm = None         # RAM-backed directory (pipewrite's source)
        self.pw_src = None
        self.records = []
        self.host = env['SMB_HOST']
        self.port = env['SMB_PORT']
        self.user = env['SMB_USER']
        self.password = env['SMB_PASS']
        self.volume = env['GLUSTER_VOLUME']
        self.ghost = env.get('GLUSTER_HOST') or socket.gethostname()
        self.fuse = env['FUSE_MOUNT']
        self.local = env['LOCAL_DIR']
        self.bricks = env['BRICK_DIRS'].split()
        self.smbd_pid = smbd_main_pid(env)
        # where the gfapi clients (fio, mdfloor) run: here, or in the
        # stack's platform (its command prefix and root)
        self.gexec = gfapi_exec(env)
        self.proot = platform_root(env)
        self.nrun = 0
        self.total_runs = 0
        self.restarts = []
        self.warmed = set()
        self.cpu = None         # the CpuSampler of the run going on
        self.t_start = now()

    def add_cpu(self, res, backend):
        """smbd and brick CPU seconds per GiB moved, over the run's timed
        window (CpuSampler)"""
        t0, t1, nbytes = res.get('t_start'), res.get('t_end'), \
            res.get('bytes')
        if not res.get('ok') or not t0 or not t1 or not nbytes or t1 <= t0:
            return
        c = self.cpu.window(t0, t1)
        want = res.get('clients', 1)
        gib = nbytes / float(GiB)
        res['cpu'] = {k: (round(v, 4) if isinstance(v, float) else v)
                      for k, v in c.items()}
        res['cpu']['window_s'] = round(t1 - t0, 4)
        self.note('  CPU over the timed window: %s' % json.dumps(res['cpu']))
        if backend == 'gfapi':
            if c['client'] > 0:
                res['client_cpu_s_per_gib'] = c['client'] / gib
        elif c['smbd_procs'] != want:
            res['cpu']['error'] = 'found %d smbd processes serving the ' \
                'run\'s clients, expected %d' % (c['smbd_procs'], want)
            self.note('  ' + res['cpu']['error'])
        elif c['smbd'] > 0:
            res['smbd_cpu_s_per_gib'] = c['smbd'] / gib
        if backend != 'local' and c['brick'] > 0:
            res['brick_cpu_s_per_gib'] = c['brick'] / gib

    def record(self, workload, vid, label, metric, unit, hib, backend, rep,
               res):
        rec = {
            'workload': workload, 'variant': vid, 'label': label,
            'backend': backend, 'rep': rep, 'metric': metric, 'unit': unit,
            'higher_is_better': hib, 'ok': bool(res.get('ok')),
            'value': res.get(metric) if res.get('ok') else None,
            'lat_p50_us': res.get('lat_p50_us') if metric != 'smbd_rss_mib'
            else None,
            'lat_p99_us': res.get('lat_p99_us') if metric != 'smbd_rss_mib'
            else None,
            'checked_bytes': res.get('checked_bytes'),
            # CPU seconds per GiB moved (CpuSampler), for the main metric
            'smbd_cpu_s_per_gib': res.get('smbd_cpu_s_per_gib')
            if metric != 'smbd_rss_mib' else None,
            'brick_cpu_s_per_gib': res.get('brick_cpu_s_per_gib')
            if metric != 'smbd_rss_mib' else None,
            # raw gfapi: the CPU of the client process itself (fio, with
            # gfapi's threads)
            'client_cpu_s_per_gib': res.get('client_cpu_s_per_gib'),
            'error': res.get('error'),
            'raw': res,
        }
        self.records.append(rec)
        return rec

    def run_all(self, workloads, backends, reps):
        plan = []
        for w in WORKLOAD_NAMES:
            if w not in workloads:
                continue
            for v in self.variants(w):
                bs = [b for b in backends if b in v[5]]
                plan.append((w, v, bs))
        self.total_runs = sum(len(bs) for _, _, bs in plan) * reps
        for w, (vid, label, metric, unit, hib, _, fn), bs in plan:
            for rep in range(reps):
                k = rep % len(bs)
                for b in bs[k:] + bs[:k]:
                    self.nrun += 1
                    fds0 = self.check_bricks()
                    if w in CPU_WORKLOADS and (b in ALL_SMB_SHARES or
                                               b == 'gfapi'):
                        # raw gfapi: fio's own process does what smbd
                        # does for a share
                        self.cpu = CpuSampler(
                            self.smbd_pid if b != 'gfapi' else None,
                            self.port, self.brick_pids().values(),
                            trace_clients=b == 'gfapi')
                        self.cpu.start()
                    t = now()
                    try:
                        res = fn(b)
                    except Exception as e:   # a broken run, not a crash
                        self.note(traceback.format_exc())
                        res = {'ok': False, 'error': 'internal error: %s'
                               % e}
                    finally:
                        if self.cpu is not None:
                            self.cpu.stop()
                    dt = now() - t
                    if self.cpu is not None:
                        self.add_cpu(res, b)
                        self.cpu = None
                    # descriptors the run left open in the bricks (the
                    # stock module's directory handles)
                    res['brick_fds_before'] = fds0
                    res['brick_fds_after'] = self.brick_fds()[3]
                    if w == 'smallfiles':
                        for step in SF_STEPS:
                            r = dict(res)
                            r['seconds'] = res.get('steps', {}).get(step)
                            self.record(w, 'smallfiles-%s' % step,
                                        '%d files of 4 KiB: %s (smbclient)'
                                        % (self.cfg.sf_files,
                                           SF_STEP_LABELS.get(step, step)),
                                        'seconds', 's', False, b, rep + 1, r)
                        shown = ' '.join('%s %.2fs' % (s, v) for s, v in
                                         res.get('steps', {}).items())
                    else:
                        rec = self.record(w, vid, label, metric, unit, hib,
                                          b, rep + 1, res)
                        if 'smbd_rss_mib' in res:
                            self.record(w, vid + '-rss', label.split(',')[0]
                                        + ': RSS of their smbd processes',
                                        'smbd_rss_mib', 'MiB', False, b,
                                        rep + 1, res)
                        shown = fmt_value(rec['value'], unit) + ' ' + unit \
                            if rec['ok'] else ''
                        if rec['lat_p50_us']:
                            shown += ' (p50 %s, p99 %s)' % (
                                fmt_us(rec['lat_p50_us']),
                                fmt_us(rec['lat_p99_us']))
                        if 'smbd_rss_mib' in res:
                            shown += ' smbd RSS %.0f MiB/%d procs' % (
                                res['smbd_rss_mib'], res['smbd_procs'])
                        if rec['smbd_cpu_s_per_gib']:
                            shown += ' smbd CPU %.2f s/GiB' % \
                                rec['smbd_cpu_s_per_gib']
                        if rec['client_cpu_s_per_gib']:
                            shown += ' fio CPU %.2f s/GiB' % \
                                rec['client_cpu_s_per_gib']
                        if rec['brick_cpu_s_per_gib']:
                            shown += ', bricks %.2f' % \
                                rec['brick_cpu_s_per_gib']
                    status = 'ok' if res.get('ok') else \
                        'FAILED: %s' % res.get('error')
                    self.say('[%3d/%d %4.0fs] %-22s %-10s rep %d: %s %s '
                             '(%.1fs)' % (self.nrun, self.total_runs,
                                          now() - self.t_start, vid,
                                          SHORT.get(b, b), rep + 1, shown,
                                          status, dt))
