"""The workloads: for each, its variants (the figure each measures and
on which backends) and the function that runs one variant on one backend
and returns its result (the WORKLOADS list in common.py describes
them)."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import time

from .common import (ALL_BACKENDS, ALL_SMB_SHARES, BIN, CPU_LINGER, DATADIR,
                     LR_SEED, PW_SEED, TOP, KiB, SF_STEPS, human_size, now,
                     size_tag)
from .cpu import RssSampler


class Workloads:
    """Mixin of Bench: one method per workload."""

    def variants(self, workload):
        """[(variant id, label, metric, unit, higher_is_better, backends,
        runner)]"""
        cfg = self.cfg
        out = []
        if workload == 'seqread':
            for bs, cache in cfg.seq_variants:
                out.append(('seqread-%s-%s' % (size_tag(bs), cache),
                            'seq read %s, 1 in flight, %s' % (
                                human_size(bs), cache),
                            'mbps', 'MB/s', True, ALL_BACKENDS,
                            lambda b, bs=bs, c=cache: self.w_seqread(b, bs, c)))
        elif workload == 'pipelined':
            out.append(('pipelined-get', 'seq read, pipelined (smbclient get)',
                        'mbps', 'MB/s', True, ALL_SMB_SHARES,
                        self.w_pipelined))
        elif workload == 'randread':
            for depth in (1, 8):
                out.append(('randread-4k-qd%d' % depth,
                            'random 4 KiB reads, %d in flight' % depth,
                            'iops', 'IOPS', True, ALL_BACKENDS,
                            lambda b, d=depth: self.w_randread(b, d)))
        elif workload == 'multiclient':
            out.append(('multiclient-%d' % cfg.mc_clients,
                        '%d clients, own file each, 64 KiB reads' %
                        cfg.mc_clients, 'mbps', 'MB/s', True, ALL_SMB_SHARES,
                        self.w_multiclient))
        elif workload == 'smallread':
            out.append(('smallread-%d' % cfg.sr_clients,
                        'small-file reads, %d clients (open+read 4 KiB+close)'
                        % cfg.sr_clients, 'iops', 'req/s', True,
                        ALL_SMB_SHARES, self.w_smallread))
        elif workload == 'seqwrite':
            for bs in cfg.write_bs:
                out.append(('seqwrite-%s' % size_tag(bs),
                            'seq write %s, 1 in flight' % human_size(bs),
                            'mbps', 'MB/s', True, ALL_BACKENDS,
                            lambda b, bs=bs: self.w_seqwrite(b, bs)))
        elif workload == 'pipewrite':
            out.append(('pipewrite-put', 'seq write, pipelined (smbclient '
                        'put to a new name)', 'mbps', 'MB/s', True,
                        ALL_SMB_SHARES, self.w_pipewrite))
            out.append(('pipewrite-put-existing', 'seq write, pipelined '
                        '(smbclient put over an existing file)', 'mbps',
                        'MB/s', True, ALL_SMB_SHARES,
                        lambda b: self.w_pipewrite(b, existing=True)))
        elif workload == 'leaseread':
            for bs, depth, cache in cfg.lease_read_variants:
                out.append(('leaseread-%s-x%d-%s' % (size_tag(bs), depth,
                                                     cache),
                            'read %s x %d in flight, RWH lease, %s' % (
                                human_size(bs), depth, cache),
                            'mbps', 'MB/s', True, ALL_BACKENDS,
                            lambda b, bs=bs, d=depth, c=cache:
                            self.w_leaseread(b, bs, d, c)))
        elif workload == 'leasewrite':
            for bs, depth in cfg.lease_write_variants:
                out.append(('leasewrite-%s-x%d' % (size_tag(bs), depth),
                            'write %s x %d in flight, RWH lease' % (
                                human_size(bs), depth), 'mbps', 'MB/s',
                            True, ALL_SMB_SHARES,
                            lambda b, bs=bs, d=depth:
                            self.w_leasewrite(b, bs, d)))
        elif workload == 'manywriters':
            out.append(('manywriters-%d' % cfg.mw_clients,
                        '%d writers, 8 KiB writes' % cfg.mw_clients,
                        'iops', 'IOPS', True, ALL_SMB_SHARES,
                        self.w_manywriters))
        elif workload == 'smallfiles':
            out.append(('smallfiles', '%d files of 4 KiB: create/list/read/'
                        'delete' % cfg.sf_files, 'seconds', 's', False,
                        ALL_BACKENDS, self.w_smallfiles))
        return out

    def w_seqread(self, backend, bs, cache):
        cfg = self.cfg
        if cache == 'cold':
            self.drop_caches()
        else:
            self.warm(self.fio_name() if backend == 'gfapi'
                      else self.seq_name())
        if backend == 'gfapi':
            return self.fio('seqread', 'read', bs, cfg.seq_size,
                            DATADIR + '/' + self.fio_name(),
                            runtime=cfg.seq_cap)
        return self.smbload('seqread', backend,
                            DATADIR + '/' + self.seq_name(),
                            timeout=cfg.seq_cap + 300, bs=bs,
                            size=cfg.seq_size, seed=self.seq_seed(),
                            seconds=cfg.seq_cap, linger=CPU_LINGER)

    def w_randread(self, backend, depth):
        cfg = self.cfg
        if backend == 'gfapi':
            self.warm(self.fio_name())
            return self.fio('randread', 'randread', cfg.rand_bs, cfg.seq_size,
                            DATADIR + '/' + self.fio_name(),
                            runtime=cfg.rand_secs, time_based=True,
                            engine='gfapi' if depth == 1 else 'gfapi_async',
                            iodepth=depth)
        self.warm(self.seq_name())
        return self.smbload('randread', backend,
                            DATADIR + '/' + self.seq_name(),
                            timeout=cfg.rand_secs + 300, bs=cfg.rand_bs,
                            size=cfg.seq_size, seed=self.seq_seed(),
                            seconds=cfg.rand_secs, clients=depth,
                            linger=CPU_LINGER)

    def w_multiclient(self, backend):
        cfg = self.cfg
        for i in range(cfg.mc_clients):
            self.warm('%s%02d.dat' % (self.mc_prefix(), i))
        sampler = RssSampler(self.smbd_pid)
        sampler.start()
        try:
            res = self.smbload('multiread', backend,
                               DATADIR + '/' + self.mc_prefix(),
                               timeout=cfg.mc_cap + 300, bs=cfg.mc_bs,
                               size=cfg.mc_size, seed=2000,
                               clients=cfg.mc_clients, seconds=cfg.mc_cap,
                               linger=0.6)
        finally:
            sampler.stop()
        res['smbd_rss_mib'] = round(sampler.peak_kib / 1024.0, 1)
        res['smbd_procs'] = sampler.peak_procs
        return res

    def w_smallread(self, backend):
        cfg = self.cfg
        return self.smbload('smallread', backend, DATADIR + '/' + self.sr_dir(),
                            timeout=cfg.sr_secs + 300,
                            clients=cfg.sr_clients, files=cfg.sr_files,
                            fsize=cfg.sr_size, seed=5000, seconds=cfg.sr_secs)

    def w_seqwrite(self, backend, bs):
        cfg = self.cfg
        try:
            if backend == 'gfapi':
                return self.fio('seqwrite', 'write', bs, cfg.write_size,
                                DATADIR + '/w-gfapi.dat',
                                runtime=cfg.write_cap)
            return self.smbload('seqwrite', backend,
                                DATADIR + '/w-%s.dat' % backend,
                                timeout=cfg.write_cap + 300, bs=bs,
                                size=cfg.write_size, seed=3000 + bs // KiB,
                                seconds=cfg.write_cap, samples=1024,
                                linger=CPU_LINGER)
        finally:
            subprocess.run(['sync'])

    def smb2q(self, action, backend, name, size, bs, depth, seed):
        """test/tools/smb2q ACTION of DATADIR/name under an RWH lease;
        its JSON result, or an error result"""
        cmd = [os.path.join(TOP, 'test', 'tools', 'smb2q'), '--host',
               self.host, '--port', str(self.port), '--user', self.user,
               '--password', self.password, '--share', backend, '--file',
               DATADIR + '/' + name, '--size', str(size),
               '--depth', str(depth), '--req-size', str(bs), '--seed',
               str(seed), '--lease', '--linger', str(CPU_LINGER), action]
        rc, out, err = self.run_cmd(cmd, 900, client=True)
        try:
            r = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            r = None
        if rc != 0 or r is None:
            return {'ok': False, 'error': 'smb2q exited %d: %s' % (
                rc, (err.strip() or out.strip())[-300:])}
        res = {'ok': True, 'mbps': r.get(action + '_MBps'),
               'seconds': r.get(action + '_seconds'), 'bytes': size,
               't_start': r.get(action + '_t_start'),
               't_end': r.get(action + '_t_end'),
               'granted': r.get('granted'), 'sha256': r.get('sha256'),
               'max_outstanding': r.get('max_outstanding_observed')}
        if r.get('granted') != 'lease RWH':
            res.update(ok=False, error='granted %s, not an RWH lease' %
                       r.get('granted'))
        return res

    def w_leaseread(self, backend, bs, depth, cache):
        """smb2q --lease read of the lease file (every byte checked by
        smb2q); on the volume another brick's (replica set's) file at each
        repetition, in turn; gfapi: fio gfapi_async at the same size and
        depth"""
        cfg = self.cfg
        if backend == 'gfapi':
            if cache == 'cold':
                self.drop_caches()
            else:
                self.warm(self.fio_name())
            return self.fio('leaseread', 'read', bs,
                            min(cfg.lease_size, cfg.seq_size),
                            DATADIR + '/' + self.fio_name(),
                            engine='gfapi_async', iodepth=depth)
        name = self.lr_name()
        label = None
        if backend != 'local':
            # another brick's (replica set's) file at each repetition
            names = self.lr_brick_names()
            calls = self.__dict__.setdefault('_lr_calls', {})
            k = calls.get((backend, bs, depth, cache), 0)
            calls[(backend, bs, depth, cache)] = k + 1
            label, name = names[k % len(names)]
        if cache == 'cold':
            self.drop_caches()
        else:
            self.warm(name)
        res = self.smb2q('read', backend, name, cfg.lease_size,
                         bs, depth, LR_SEED)
        if res['ok']:
            # smb2q fails on any byte that differs from its pattern
            res['checked_bytes'] = cfg.lease_size
            if label is not None and res.get('mbps'):
                res['brick'] = label
                res['per_brick_mbps'] = {label: res['mbps']}
        return res

    def w_leasewrite(self, backend, bs, depth):
        """smb2q --lease write of lease_size bytes; the file then hashed
        through the backend's own path and compared.  On the volume the
        name lands on another brick (replica set) at each repetition, in
        turn (brick, per_brick_mbps: results.md's Per brick section)."""
        import hashlib
        cfg = self.cfg
        name = 'lw-%s.dat' % backend
        label = None
        if backend != 'local':
            names = self.brick_names(self.backend_root(backend),
                                     'lw-%s' % backend)
            calls = self.__dict__.setdefault('_lw_calls', {})
            k = calls.get((backend, bs, depth), 0)
            calls[(backend, bs, depth)] = k + 1
            label, name = names[k % len(names)]
        res = self.smb2q('write', backend, name, cfg.lease_size, bs, depth,
                         7000 + bs // KiB)
        if label is not None and res.get('ok') and res.get('mbps'):
            res['brick'] = label
            res['per_brick_mbps'] = {label: res['mbps']}
        path = os.path.join(self.backend_root(backend), name)
        h = hashlib.sha256()
        try:
            with open(path, 'rb') as f:
                for blk in iter(lambda: f.read(4 << 20), b''):
                    h.update(blk)
            os.unlink(path)
        except OSError as e:
            res.update(ok=False, error='cannot check %s: %s' % (path, e))
            return res
        finally:
            subprocess.run(['sync'])
        if res['ok'] and h.hexdigest() != res.get('sha256'):
            res.update(ok=False, error='the file written differs')
        res['checked_bytes'] = cfg.lease_size if res['ok'] else 0
        res['checked_via'] = path
        return res

    def w_manywriters(self, backend):
        cfg = self.cfg
        try:
            return self.smbload('multiwrite', backend,
                                DATADIR + '/mw-%s-' % backend,
                                timeout=cfg.mw_secs + 300, bs=cfg.mw_bs,
                                clients=cfg.mw_clients, seed=4000,
                                seconds=cfg.mw_secs, region=cfg.mw_region)
        finally:
            subprocess.run(['sync'])

    def w_pipelined(self, backend):
        cfg = self.cfg
        self.warm(self.seq_name())
        fifo = os.path.join(self.tmp, 'get.fifo')
        if os.path.exists(fifo):
            os.unlink(fifo)
        os.mkfifo(fifo)
        chk_cmd = [os.path.join(BIN, 'patfile'), 'stream', fifo,
                   str(cfg.seq_size), str(self.seq_seed())]
        cli_cmd = self.smbclient_cmd(backend, [
            'get %s\\%s %s' % (DATADIR, self.seq_name(), fifo)])
        self.note('+ ' + ' '.join(chk_cmd))
        self.note('+ ' + ' '.join(cli_cmd))
        chk = subprocess.Popen(chk_cmd, stdout=subprocess.PIPE,
                               universal_newlines=True)
        clilog = open(os.path.join(self.tmp, 'smbclient.out'), 'w+')
        cli = subprocess.Popen(cli_cmd, stdout=clilog,
                               stderr=subprocess.STDOUT)
        if self.cpu is not None:
            self.cpu.add_client(cli.pid)
        deadline = now() + 300
        out = None
        while now() < deadline:
            if chk.poll() is not None:
                break
            if cli.poll() is not None:
                # smbclient gone: make sure the checker's open returns
                t = now()
                while chk.poll() is None and now() - t < 5:
                    time.sleep(0.1)
                if chk.poll() is None:
                    try:
                        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                        os.close(fd)
                    except OSError:
                        pass
                break
            time.sleep(0.05)
        try:
            out, _ = chk.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            chk.kill()
            out, _ = chk.communicate()
        self.stop_client(cli)
        clilog.seek(0)
        self.note('  smbclient: ' + clilog.read()[-1000:].strip())
        clilog.close()
        try:
            res = json.loads(out)
        except ValueError:
            res = {'ok': False, 'error': 'checker printed %r' % out[-200:]}
        self.note('  ' + json.dumps(res))
        return res

    def w_pipewrite(self, backend, existing=False):
        """smbclient put of the pattern file in /dev/shm (Data.prepare)
        to one name on every brick (every replica set) of the volume, in
        one smbclient session, each put timed by `patfile now` marks
        before and after it; then every file checked (every byte) through
        the backend's own path, and deleted.  mbps: the median over the
        bricks (one put on a local share); per_brick_mbps, slowest_brick
        and slowest_mbps: each brick's put.  existing: put over files of
        the same size and another pattern, written through the backend's
        own path before (untimed).  The brick put first rotates with
        each repetition."""
        cfg = self.cfg
        size = cfg.pw_size
        root = self.backend_root(backend)
        if backend == 'local':
            names = [(None, 'pw-%s.dat' % backend)]
        else:
            names = self.brick_names(root, 'pw-%s' % backend)
            # the brick put first in the session rotates from one
            # repetition to the next: order is not confounded with brick
            calls = self.__dict__.setdefault('_pw_calls', {})
            k = calls.get((backend, existing), 0)
            calls[(backend, existing)] = k + 1
            k %= len(names)
            names = names[k:] + names[:k]
        dsts = [os.path.join(root, n) for _, n in names]
        for dst in dsts:
            if os.path.exists(dst):
                os.unlink(dst)
        if existing:
            for dst in dsts:
                self.patfile('make', dst, size, PW_SEED + 1)
                os.chmod(dst, 0o666)    # smbd's user overwrites it
            subprocess.run(['sync'])
        marks = os.path.join(self.tmp, 'pw.marks')
        if os.path.exists(marks):
            os.unlink(marks)
        # commands on stdin: smbclient runs `!cmd` only in its interactive
        # loop, not with -c.  The sleeps around the marks give the
        # CpuSampler a sample of the serving smbd before t_start and one
        # after t_end.
        mark = '!%s now >> %s' % (os.path.join(BIN, 'patfile'), marks)
        cmds = ['cd %s' % DATADIR, '!sleep %g' % CPU_LINGER, mark]
        for _, n in names:
            cmds += ['put %s %s' % (self.pw_src, n), mark]
        cmds.append('!sleep %g' % CPU_LINGER)
        cmdfile = os.path.join(self.tmp, 'pw.cmds')
        with open(cmdfile, 'w') as f:
            f.write('\n'.join(cmds) + '\n')
        cmd = self.smbclient_cmd(backend, None)
        self.note('+ ' + ' '.join(cmd) + ' < ' + cmdfile + ': ' +
                  '; '.join(cmds))
        outf = os.path.join(self.tmp, 'pw.out')
        want = len(names) + 1
        try:
            with open(outf, 'w') as o, open(cmdfile) as i:
                cli = subprocess.Popen(cmd, stdin=i, stdout=o,
                                       stderr=subprocess.STDOUT)
                if self.cpu is not None:
                    self.cpu.add_client(cli.pid)
                # (not waiting for its exit: the stock module's tree
                # disconnect takes ~10 s; stop_client)
                deadline = now() + 300 * len(names)
                while now() < deadline and cli.poll() is None:
                    try:
                        with open(marks) as f:
                            if len(f.read().split()) >= want:
                                break
                    except OSError:
                        pass
                    time.sleep(0.05)
                self.stop_client(cli, grace=CPU_LINGER + 0.5)
            with open(outf) as f:
                text = f.read()
            self.note('  smbclient: ' + text[-1000:].strip())
            try:
                with open(marks) as f:
                    t = [float(x) for x in f.read().split()]
            except (OSError, ValueError):
                t = []
            if len(t) < want or any(t[k + 1] <= t[k]
                                    for k in range(len(t) - 1)):
                return {'ok': False, 'error': 'smbclient did not finish '
                        'the puts (%d of %d marks): %s' % (
                            len(t), want, text.strip()[-300:])}
            if 'NT_STATUS_' in text:
                m = re.search(r'.*NT_STATUS_\w+.*', text)
                return {'ok': False, 'error': 'smbclient: ' +
                        m.group(0).strip()}
            per = [size / (t[k + 1] - t[k]) / 1e6
                   for k in range(len(names))]
            srt = sorted(per)
            mid = len(srt) // 2
            med = srt[mid] if len(srt) % 2 else (srt[mid - 1] +
                                                 srt[mid]) / 2
            k_slow = per.index(srt[0])
            secs = t[-1] - t[0]
            res = {'ok': True, 'bytes': size * len(names), 'seconds': secs,
                   'mbps': med, 't_start': t[0], 't_end': t[-1],
                   'checked_bytes': 0, 'checked_via': dsts[0],
                   'checked_paths': dsts}
            if names[0][0] is not None:
                res.update(per_brick_mbps={names[k][0]: per[k]
                                           for k in range(len(names))},
                           per_brick_names={lab: n for lab, n in names},
                           brick_order=[lab for lab, _ in names],
                           slowest_brick=names[k_slow][0],
                           slowest_mbps=per[k_slow])
            for dst in dsts:
                # the old file was written through the same path: its
                # pages may still be in the page cache (a FUSE mount
                # keeps them until it sees the file change), so drop
                # them first
                try:
                    fd = os.open(dst, os.O_RDONLY)
                    try:
                        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                    finally:
                        os.close(fd)
                except OSError:
                    pass
                rc, out, _ = self.patfile('check', dst, size, PW_SEED,
                                          'all')
                if rc != 0:
                    try:
                        err = json.loads(out).get('error')
                    except ValueError:
                        err = out.strip()[-300:]
                    res.update(ok=False, error='written file %s: %s' % (
                        os.path.basename(dst), err))
                    break
                res['checked_bytes'] += size
            self.note('  ' + json.dumps(res))
            return res
        finally:
            for dst in dsts:
                if os.path.exists(dst):
                    os.unlink(dst)
            subprocess.run(['sync'])

    def w_smallfiles(self, backend):
        cfg = self.cfg
        n = cfg.sf_files
        name = 'sf-%s' % backend
        local_dir = os.path.join(self.backend_root(backend), name)
        if os.path.exists(local_dir):
            shutil.rmtree(local_dir)
        if backend == 'gfapi':
            return self.w_smallfiles_gfapi(name, local_dir)
        src = os.path.join(self.tmp, 'sf-src')
        dst = os.path.join(self.tmp, 'sf-dst')
        if os.path.exists(dst):
            shutil.rmtree(dst)
        os.makedirs(dst)
        marks = os.path.join(self.tmp, 'marks')
        if os.path.exists(marks):
            os.unlink(marks)
        # commands on stdin: smbclient runs `!cmd` (here: a time stamp)
        # only in its interactive loop, not with -c
        mark = '!date +%%s.%%N >> %s' % marks
        cmds = ['prompt off', 'cd %s' % DATADIR, 'mkdir %s' % name,
                'cd %s' % name, 'lcd %s' % src,
                mark, 'mput *', mark, 'ls', mark, 'ls', mark,
                'lcd %s' % dst, 'mget *', mark,
                'cd ..', 'deltree %s' % name, mark]
        cmdfile = os.path.join(self.tmp, 'sf.cmds')
        with open(cmdfile, 'w') as f:
            f.write('\n'.join(cmds) + '\n')
        cmd = self.smbclient_cmd(backend, None)
        self.note('+ ' + ' '.join(cmd) + ' < ' + cmdfile + ': ' +
                  '; '.join(cmds))
        outf = os.path.join(self.tmp, 'sf.out')
        with open(outf, 'w') as o, open(cmdfile) as i:
            cli = subprocess.Popen(cmd, stdin=i, stdout=o,
                                   stderr=subprocess.STDOUT)
            deadline = now() + 900
            while now() < deadline and cli.poll() is None:
                try:
                    with open(marks) as f:
                        if len(f.read().split()) >= 6:
                            break
                except OSError:
                    pass
                time.sleep(0.05)
            self.stop_client(cli)
        with open(outf) as f:
            text = f.read()
        self.note('  smbclient output (tail): ' + text[-1500:].strip())
        try:
            with open(marks) as f:
                t = [float(x) for x in f.read().split()]
        except OSError:
            t = []
        res = {'ok': False}
        if len(t) < 6:
            res['error'] = 'smbclient did not finish its steps (%d of 6 ' \
                'marks): %s' % (len(t), text.strip()[-300:])
            return res
        steps = {'create': t[1] - t[0], 'list': t[2] - t[1],
                 'relist': t[3] - t[2], 'read': t[4] - t[3],
                 'delete': t[5] - t[4]}
        listed = len(re.findall(r'^\s+f\d{4}\.dat\s+\S*\s+%d\s' %
                                cfg.sf_size, text, re.M))
        errs = []
        if listed != 2 * n:
            errs.append('the two ls listed %d of %d files' % (listed, 2 * n))
        rc, out, _ = self.patfile('checkset', dst, n, cfg.sf_size, 7000)
        if rc != 0:
            errs.append('mget: ' + out.strip())
        if os.path.exists(local_dir):
            errs.append('deltree left %s' % local_dir)
        if 'NT_STATUS_' in text:
            m = re.search(r'.*NT_STATUS_\w+.*', text)
            errs.append('smbclient: ' + m.group(0).strip())
        res = {'ok': not errs, 'steps': steps,
               'checked_bytes': n * cfg.sf_size if rc == 0 else 0}
        if errs:
            res['error'] = '; '.join(errs)
        return res

    def w_smallfiles_gfapi(self, name, local_dir):
        """The smallfiles steps through libgfapi alone (mdfloor; on a
        platform, its own build of it with its gfapi, its log in the
        platform's /tmp)."""
        cfg = self.cfg
        logdir = tempfile.mkdtemp(prefix='gf2bench.',
                                  dir=self.proot + '/tmp')
        cmd = self.gexec + [
            os.path.join(BIN, 'mdfloor'), self.volume, self.ghost,
            '/%s/%s' % (DATADIR, name), str(cfg.sf_files),
            str(cfg.sf_size), '8',
            os.path.join(logdir[len(self.proot):], 'mdfloor-gfapi.log')]
        try:
            rc, out, err = self.run_cmd(cmd, 900)
        finally:
            shutil.rmtree(logdir, ignore_errors=True)
        self.note('  mdfloor: %s %s' % (out.strip(), err.strip()))
        steps = {}
        for line in out.splitlines():
            k, _, v = line.partition(' ')
            try:
                steps[k] = float(v)
            except ValueError:
                pass
        res = {'ok': False}
        want = SF_STEPS
        if rc != 0 or any(k not in steps for k in want):
            res['error'] = 'mdfloor failed (%d): %s' % (
                rc, (err or out).strip()[-300:])
            return res
        if os.path.exists(local_dir):
            res['error'] = 'mdfloor left %s' % local_dir
            return res
        return {'ok': True, 'steps': {k: steps[k] for k in want},
                'list_noea': steps.get('list-noea'),
                'checked_bytes': cfg.sf_files * cfg.sf_size}
