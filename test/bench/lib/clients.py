"""The clients a run drives: the load generators (smbload, patfile),
smbclient, fio's gfapi engines; the run's log and its progress lines.

The SMB clients run here; the gfapi clients (fio, mdfloor) run where the
stack's gluster is: here, or in the platform (self.gexec, its command
prefix), with the platform's libgfapi against its volume."""

import json
import os
import signal
import subprocess
import time

from .common import BIN, now
from .cpu import descendants


class Clients:
    """Mixin of Bench: running the clients and reading their results
    (needs self.log, self.cpu, self.host, self.port, self.user,
    self.password, self.volume, self.ghost, self.gexec)."""

    def note(self, msg):
        self.log.write('%s %s\n' % (time.strftime('%H:%M:%S'), msg))
        self.log.flush()

    def say(self, msg):
        print(msg, flush=True)
        self.note(msg)

    def run_cmd(self, cmd, timeout, env=None, check=False, client=False):
        """client: a client of the share under test (its smbd's CPU time
        is measured when a CpuSampler runs)"""
        self.note('+ ' + ' '.join(cmd))
        e = dict(os.environ)
        if env:
            e.update(env)
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, universal_newlines=True,
                             env=e)
        if client and self.cpu is not None:
            self.cpu.add_client(p.pid)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            # and what it started (a program in a platform runs under
            # the wrappers that enter it)
            for pid in reversed(descendants(p.pid)):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            p.kill()
            out, _ = p.communicate()
            self.note('  timed out after %s s' % timeout)
            return 124, out or '', 'timed out after %d s' % timeout
        if err.strip():
            self.note('  stderr: ' + err.strip()[-2000:])
        if out.strip():
            self.note('  stdout: ' + out.strip()[-2000:])
        if check and p.returncode != 0:
            raise RuntimeError('%s failed (%d): %s' % (
                ' '.join(cmd[:3]), p.returncode, err.strip()[-500:]))
        return p.returncode, out, err

    def smb_url(self, share, path=''):
        return 'smb://%s/%s/%s' % (self.host, share, path)

    def smbload(self, mode, share, path, timeout, **kw):
        cmd = [os.path.join(BIN, 'smbload'), mode, '--url',
               self.smb_url(share, path), '--port', str(self.port)]
        for k, v in kw.items():
            cmd += ['--' + k, str(v)]
        if os.environ.get('GF2_BENCH_CLIENT_TIMEOUT'):
            cmd += ['--timeout', os.environ['GF2_BENCH_CLIENT_TIMEOUT']]
        rc, out, err = self.run_cmd(
            cmd, timeout, env={'SMB_USER': self.user,
                               'SMB_PASS': self.password}, client=True)
        res = None
        for line in out.splitlines():
            if line.startswith('{'):
                try:
                    res = json.loads(line)
                except ValueError:
                    pass
        if res is None:
            res = {'ok': False, 'error': 'smbload %s exited %d: %s' % (
                mode, rc, (err.strip() or out.strip())[-300:])}
        elif rc != 0:
            res['ok'] = False
            res.setdefault('error', 'smbload exited %d' % rc)
        return res

    def patfile(self, *args, timeout=600):
        return self.run_cmd([os.path.join(BIN, 'patfile')] +
                            [str(a) for a in args], timeout)

    def smbclient_cmd(self, share, commands):
        cmd = ['stdbuf', '-oL', '-eL', 'smbclient',
               '//%s/%s' % (self.host, share), '-p', str(self.port),
               '-U', '%s%%%s' % (self.user, self.password)]
        if commands:
            cmd += ['-c', '; '.join(commands)]
        return cmd

    def fio(self, name, rw, bs, size, filename, runtime=None,
            time_based=False, engine='gfapi', iodepth=1, verify=True,
            timeout=300):
        cmd = ['fio', '--output-format=json', '--name=' + name,
               '--ioengine=' + engine, '--volume=' + self.volume,
               '--brick=' + self.ghost, '--filename=' + filename,
               '--rw=' + rw, '--bs=%d' % bs, '--size=%d' % size,
               '--iodepth=%d' % iodepth]
        if runtime:
            cmd.append('--runtime=%g' % runtime)
        if time_based:
            cmd.append('--time_based')
        if verify:
            cmd += ['--verify=crc32c', '--verify_interval=4096',
                    '--verify_fatal=1', '--verify_state_save=0']
            if rw in ('write', 'randwrite'):
                cmd.append('--do_verify=1')
        t = now()
        # glfs_fini (~10 s with gluster 10.3) comes after the measured part:
        # stubbed out, see nofini.c (on a platform: its own build of it,
        # at the same path there)
        nofini = os.path.join(BIN, 'gf2nofini.so')
        if self.gexec:
            cmd = self.gexec + ['env', 'LD_PRELOAD=' + nofini] + cmd
            extra = None
        else:
            extra = {'LD_PRELOAD': nofini}
        rc, out, err = self.run_cmd(cmd, timeout, env=extra, client=True)
        t_exit, wall_exit = now(), time.time()
        wall = now() - t
        self.note('  fio wall time %.1f s' % wall)
        try:
            js = json.loads(out[out.index('{'):])
            job = js['jobs'][0]
        except (ValueError, KeyError, IndexError):
            return {'ok': False, 'error': 'fio exited %d: %s' % (
                rc, (err.strip() or out.strip())[-300:])}
        d = job['write' if 'write' in rw else 'read']
        pct = d.get('clat_ns', {}).get('percentile', {})
        res = {
            'ok': rc == 0 and job.get('error', 0) == 0 and d['io_bytes'] > 0,
            'bytes': d['io_bytes'],
            'seconds': d['runtime'] / 1000.0,
            'mbps': d['bw_bytes'] / 1e6,
            'iops': d['iops'],
            'ops': d['total_ios'],
            'lat_p50_us': pct.get('50.000000', 0) / 1e3,
            'lat_p99_us': pct.get('99.000000', 0) / 1e3,
            'checked_bytes': (job['read']['io_bytes'] if verify else 0),
        }
        # the timed window on our monotonic clock: fio stamps its report
        # (wall clock, ms) when the job is over and gives the job's run
        # time; its CPU over that window is the gfapi client's (glfs_init
        # before it and the exit after it outside).  Reads only: a write
        # job's run time includes its verifying read pass.
        if 'write' not in rw and 'timestamp_ms' in js and \
                'job_runtime' in job:
            res['t_end'] = min(t_exit - (wall_exit -
                                         js['timestamp_ms'] / 1000.0), t_exit)
            res['t_start'] = res['t_end'] - job['job_runtime'] / 1000.0
        if not res['ok']:
            res['error'] = 'fio exited %d, job error %s: %s' % (
                rc, job.get('error'), err.strip()[-300:])
        return res

    def stop_client(self, p, grace=0.5):
        """A tree disconnect from the stock module takes ~10 s (glfs_fini):
        once the measured part is over, do not wait for it."""
        try:
            p.wait(grace)
        except subprocess.TimeoutExpired:
            p.terminate()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
