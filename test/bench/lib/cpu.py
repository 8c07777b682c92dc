"""What the processes serving a run cost: the peak RSS of the smbd
processes serving it (RssSampler) and the CPU time of those smbd
processes and of the brick daemons over the run's timed window
(CpuSampler)."""

import os
import threading

from .common import now


def proc_children(ppid):
    """The children of ppid that run its program (smbd's forks, here or
    in a platform's root)."""
    out = []
    try:
        exe = os.readlink('/proc/%d/exe' % ppid)
    except OSError:
        return out
    for d in os.listdir('/proc'):
        if not d.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % d) as f:
                st = f.read()
            pp = int(st[st.rindex(')') + 2:].split()[1])
            if pp != ppid:
                continue
            if os.readlink('/proc/%s/exe' % d) != exe:
                continue
            out.append(int(d))
        except (OSError, ValueError):
            continue
    return out


def vm_rss_kib(pid):
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class RssSampler(threading.Thread):
    """Peak of the summed VmRSS of the smbd processes that appear while it
    runs (the ones serving the measured clients)."""

    def __init__(self, main_pid):
        super().__init__(daemon=True)
        self.main_pid = main_pid
        self.before = set(proc_children(main_pid)) if main_pid else set()
        self.stop_ev = threading.Event()
        self.peak_kib = 0
        self.peak_procs = 0

    def run(self):
        while not self.stop_ev.is_set():
            if self.main_pid:
                new = [p for p in proc_children(self.main_pid)
                       if p not in self.before]
                tot = sum(vm_rss_kib(p) for p in new)
                if tot > self.peak_kib:
                    self.peak_kib = tot
                    self.peak_procs = len(new)
            self.stop_ev.wait(0.1)

    def stop(self):
        self.stop_ev.set()
        self.join(5)


# CPU time of the processes serving a run
#
# What is measured: the CPU time (utime + stime of /proc/PID/stat, clock
# ticks) of the smbd processes that serve this run's own client
# connections, and of the volume's brick daemons (glusterfsd), over exactly
# the run's timed window (smbload's and patfile's t_start..t_end, on
# CLOCK_MONOTONIC like time.monotonic()), divided by the bytes the run
# moved in that window.
#
# Why this way:
# - A process's utime/stime cover all its threads, exited ones included,
#   so the stock module's thread pool (its reads run in pthreadpool threads
#   of the same smbd) and both modules' gfapi threads are counted.
# - Every client connection has its own smbd child process, but the stack
#   is shared: other sessions (tests, torture) may have smbd children of
#   the same main smbd at the same time.  So neither the main smbd's
#   cutime/cstime (reaped children: everybody's, and only once they have
#   exited -- ~10 s after the disconnect with the stock module's
#   glfs_fini -- with their connection setup, glfs_init and teardown
#   included) nor "every new child" is right.  A child is ours when the
#   client end of its TCP connection (its remote port, from /proc/net/tcp)
#   is a socket held by one of this run's client processes (smbload and its
#   forked clients, or smbclient).
# - Connection setup and teardown are outside the window, as they are
#   outside the timed part: the CPU counters are sampled every 50 ms from
#   before the clients start until they have gone, and read off at t_start
#   and t_end by linear interpolation between the samples around them.
#   Clients keep their connection a little after the timed part (smbload
#   --linger) so that there is a sample after t_end; a process that
#   exits before a sample after t_end is counted up to its last sample.
#   Ticks are 10 ms: per process and window edge the error is under one
#   tick plus the interpolation's (well under 5 % of a 2-3 s run).
# - The brick daemons serve every client of the volume: their figure
#   includes whatever else used the volume during the window; "other smbd
#   CPU" (the CPU of the smbd children that are not ours, over the same
#   window) is recorded with every run as a sign of such concurrent load.
#   For the fuse share, the FUSE client (glusterfs) does the gluster work
#   and is in neither figure; for local, there is no brick.

CLK_TCK = os.sysconf('SC_CLK_TCK')


def proc_cpu(pid):
    """(start time, utime + stime) of a process, in clock ticks"""
    with open('/proc/%d/stat' % pid) as f:
        st = f.read()
    fl = st[st.rindex(')') + 2:].split()
    return int(fl[19]), int(fl[11]) + int(fl[12])


def proc_comm(pid):
    try:
        with open('/proc/%d/comm' % pid) as f:
            return f.read().strip()
    except OSError:
        return '?'


def thread_children(pid):
    """the children of a process (of all its threads)"""
    out = []
    try:
        tids = os.listdir('/proc/%d/task' % pid)
    except OSError:
        return out
    for tid in tids:
        try:
            with open('/proc/%d/task/%s/children' % (pid, tid)) as f:
                out += [int(x) for x in f.read().split()]
        except (OSError, ValueError):
            continue
    return out


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += thread_children(p)
    return out


def socket_inodes(pid):
    out = set()
    try:
        fds = os.listdir('/proc/%d/fd' % pid)
    except OSError:
        return out
    for fd in fds:
        try:
            link = os.readlink('/proc/%d/fd/%s' % (pid, fd))
        except OSError:
            continue
        if link.startswith('socket:['):
            out.add(int(link[8:-1]))
    return out


def other_netns(pid):
    """Does pid live in another network namespace than this process?"""
    try:
        return os.readlink('/proc/%d/ns/net' % pid) != \
            os.readlink('/proc/self/ns/net')
    except OSError:
        return False


def tcp_sockets(server_pid=None):
    """{socket inode: (local port, remote port)} of every TCP socket of
    this network namespace and of server_pid's (a platform's smbd serves
    in a namespace of its own; inode numbers are unique across them)"""
    out = {}
    files = ['/proc/net/tcp', '/proc/net/tcp6']
    if server_pid and other_netns(server_pid):
        files += ['/proc/%d/net/tcp' % server_pid,
                  '/proc/%d/net/tcp6' % server_pid]
    for fn in files:
        try:
            with open(fn) as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fl = line.split()
            try:
                ino = int(fl[9])
                if ino:
                    out[ino] = (int(fl[1].rsplit(':', 1)[1], 16),
                                int(fl[2].rsplit(':', 1)[1], 16))
            except (IndexError, ValueError):
                continue
    return out


class CpuSampler(threading.Thread):
    """Samples the CPU time of the main smbd's children and of the brick
    daemons while a run goes on; window() reads it off over the timed
    part (see the comment above)."""

    INTERVAL = 0.05
    GIVE_UP = 60        # samples after which a child with no SMB
    #                     connection counts as not ours

    def __init__(self, main_pid, smb_port, brick_pids, trace_clients=False):
        super().__init__(daemon=True)
        self.main_pid = main_pid
        # the client processes themselves too (kind 'client'): for raw
        # gfapi, where the client does what smbd does for the shares.  On
        # a platform fio runs below the wrappers that enter it
        # (test/stack exec, test/platform/root, nsenter, chroot): the
        # platform shares this machine's PID namespace, so fio is among
        # the descendants of the process started here, the idle wrappers
        # with it (window()'s client_procs names each)
        self.trace_clients = trace_clients
        self.port = int(smb_port)
        self.brick_pids = [p for p in brick_pids if p]
        self.clients = set()
        self.lock = threading.Lock()
        self.stop_ev = threading.Event()
        self.series = {}        # (kind, pid, start) -> [(t, ticks)]
        self.comm = {}          # client key -> its program's name
        self.owner = {}         # smbd key -> True (ours) / False
        self.tries = {}
        for key in self._sample():
            # there before our clients: not theirs
            if key[0] == 'smbd':
                self.owner[key] = False

    def add_client(self, pid):
        """a client process of this run (its children are too)"""
        with self.lock:
            self.clients.add(pid)

    def smbd_children(self):
        if not self.main_pid:
            return []
        try:
            with open('/proc/%d/task/%d/children' % (self.main_pid,
                                                     self.main_pid)) as f:
                return [int(x) for x in f.read().split()]
        except (OSError, ValueError):
            return proc_children(self.main_pid)

    def _sample(self):
        seen = []
        kinds = [('smbd', self.smbd_children()), ('brick', self.brick_pids)]
        if self.trace_clients:
            with self.lock:
                clients = list(self.clients)
            kinds.append(('client', [p for c in clients
                                     for p in descendants(c)]))
        for kind, pids in kinds:
            for pid in pids:
                t = now()
                try:
                    start, ticks = proc_cpu(pid)
                except (OSError, ValueError, IndexError):
                    continue
                key = (kind, pid, start)
                if kind == 'client':
                    # the last name (a wrapper that execs fio becomes fio)
                    self.comm[key] = proc_comm(pid)
                self.series.setdefault(key, []).append((t, ticks))
                seen.append(key)
        return seen

    def _classify(self, keys):
        with self.lock:
            clients = list(self.clients)
        if not clients:
            return
        table = tcp_sockets(self.main_pid)
        ports = set()
        for c in clients:
            for p in descendants(c):
                for ino in socket_inodes(p):
                    lr = table.get(ino)
                    if lr and lr[1] == self.port:
                        ports.add(lr[0])
        for key in keys:
            for ino in socket_inodes(key[1]):
                lr = table.get(ino)
                if lr and lr[0] == self.port and lr[1] != 0:
                    self.owner[key] = lr[1] in ports
                    break
            else:
                self.tries[key] = self.tries.get(key, 0) + 1
                if self.tries[key] >= self.GIVE_UP:
                    self.owner[key] = False

    def run(self):
        while True:
            seen = self._sample()
            new = [k for k in seen if k[0] == 'smbd' and k not in self.owner]
            if new:
                self._classify(new)
            if self.stop_ev.wait(self.INTERVAL):
                break

    def stop(self):
        self.stop_ev.set()
        self.join(5)
        self._sample()

    @staticmethod
    def _at(series, t):
        if t <= series[0][0]:
            return series[0][1]
        if t >= series[-1][0]:
            return series[-1][1]
        for (t0, v0), (t1, v1) in zip(series, series[1:]):
            if t0 <= t <= t1:
                if t1 == t0:
                    return v1
                return v0 + (v1 - v0) * (t - t0) / (t1 - t0)
        return series[-1][1]

    def window(self, t0, t1):
        """CPU seconds over [t0, t1]: {'smbd': ours, 'smbd_procs': how many
        of ours, 'other_smbd': the other children's, 'brick': the bricks',
        'late': ours first seen after t0 or last seen before t1, 'client':
        the client processes' own, when traced, and 'client_procs': their
        programs' names, each with the CPU seconds of its processes}"""
        out = {'smbd': 0.0, 'smbd_procs': 0, 'other_smbd': 0.0,
               'brick': 0.0, 'late': 0, 'client': 0.0}
        for key, ser in self.series.items():
            d = (self._at(ser, t1) - self._at(ser, t0)) / CLK_TCK
            if key[0] == 'brick':
                out['brick'] += d
            elif key[0] == 'client':
                out['client'] += d
                name = self.comm.get(key, '?')
                procs = out.setdefault('client_procs', {})
                procs[name] = round(procs.get(name, 0.0) + d, 4)
            elif self.owner.get(key):
                out['smbd'] += d
                out['smbd_procs'] += 1
                if ser[0][0] > t0 or ser[-1][0] < t1:
                    out['late'] += 1
                    out.setdefault('late_detail', []).append(
                        (round(ser[0][0] - t0, 3), round(ser[-1][0] - t1, 3),
                         len(ser)))
            else:
                out['other_smbd'] += d
        return out
