"""The counters in Prometheus through Debian's node_exporter.

A private smbd (its own lock directory, so the counters are this test's
alone) serves a glusterfs2 share of the stack's volume.  The package's
writer (the ExecStart of tools/systemd/glusterfs2-textfile.service, run
here as the timer would) writes glusterfs2.prom into a directory that a
prometheus-node-exporter started by the test reads with its textfile
collector, on a loopback port of its own; the test scrapes it over HTTP
while a client writes and reads, compares the figures with the traffic,
restarts smbd and checks that every counter kept its value and grows on.
The Grafana dashboard is checked against what was scraped.
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import time
import urllib.request
import uuid

import pytest
import smbc

from conftest import TOP
from gf2_private_smbd import PrivateSmbd, private_port

STATS = os.path.join(TOP, 'tools', 'glusterfs2-stats')
UNIT = os.path.join(TOP, 'tools', 'systemd', 'glusterfs2-textfile.service')
DASHBOARD = os.path.join(TOP, 'tools', 'glusterfs2-dashboard.json')
EXPORTER = '/usr/bin/prometheus-node-exporter'
SHARE = 'gf2prom'
MiB = 1 << 20


def writer_command(conf, textdir):
    """The unit's ExecStart, pointed at this tree, smb.conf and directory."""
    with open(UNIT) as f:
        line = [l for l in f if l.startswith('ExecStart=')][0]
    argv = shlex.split(line.split('=', 1)[1])
    assert argv[0] == '/usr/bin/glusterfs2-stats', argv
    argv = [STATS, '-s', conf] + [a.replace('${TEXTFILE_DIR}', textdir)
                                  for a in argv[1:]]
    assert '--textfile' in argv and textdir in argv, argv
    return argv


def parse_metrics(text):
    """{(name, ((label, value), ...)): float} of a Prometheus scrape."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith('#'):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$',
                     line)
        assert m, 'unparsable line: %r' % line
        labels = tuple(sorted(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"',
                                         m.group(2) or '')))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


class Exporter:
    def __init__(self, port, textdir, logpath):
        self.url = 'http://127.0.0.1:%d/metrics' % port
        self.log = open(logpath, 'w')
        self.proc = subprocess.Popen(
            [EXPORTER, '--web.listen-address=127.0.0.1:%d' % port,
             '--collector.disable-defaults', '--collector.textfile',
             '--collector.textfile.directory=' + textdir],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while True:
            try:
                self.scrape()
                return
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    raise
                time.sleep(0.2)

    def scrape(self):
        with urllib.request.urlopen(self.url, timeout=10) as r:
            return r.read().decode()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()


def ours(metrics):
    return {k: v for k, v in metrics.items()
            if k[0].startswith('glusterfs2_') and
            dict(k[1]).get('share') == SHARE}


def value(metrics, name):
    return metrics.get((name, (('share', SHARE),)), 0.0)


@pytest.fixture
def setup(stack, tmp_path):
    if not os.access(EXPORTER, os.X_OK):
        pytest.fail('prometheus-node-exporter is missing: run '
                    'scripts/install-deps')
    srv = PrivateSmbd('prometheus', stack,
                      port=private_port(stack, 'prometheus'))
    share = [('vfs objects', 'glusterfs2'), ('path', '/'),
             ('glusterfs2:volume', stack['GLUSTER_VOLUME']),
             ('glusterfs2:volfile_server', stack.get('GLUSTER_HOST',
                                                     'localhost')),
             ('glusterfs2:logfile', os.path.join(srv.dir,
                                                 'glusterfs2-%M.log')),
             ('kernel share modes', 'no'), ('read only', 'no')]
    conf = srv.write_conf([], [(SHARE, share)])
    lock = os.path.join(srv.dir, 'lock', 'glusterfs2')
    shutil.rmtree(lock, ignore_errors=True)     # earlier runs' counters
    textdir = str(tmp_path / 'textfile')
    os.makedirs(textdir)
    srv.start()
    exp = None
    try:
        exp = Exporter(private_port(stack, 'prometheus-exporter'), textdir,
                       str(tmp_path / 'node_exporter.log'))
        yield srv, conf, textdir, exp
    finally:
        if exp is not None:
            exp.stop()
        srv.stop()


def collect(conf, textdir, exp):
    """One run of the timer's command, then a scrape."""
    p = subprocess.run(writer_command(conf, textdir), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    assert p.returncode == 0, p.stdout
    assert os.listdir(textdir) == ['glusterfs2.prom']
    text = exp.scrape()
    assert 'node_textfile_scrape_error 0' in text, text[-2000:]
    return parse_metrics(text)


def wait_for(conf, textdir, exp, name, want, timeout=30):
    """Counters reach smbd's files at most every 2 s: collect until
    name is at least want."""
    deadline = time.time() + timeout
    while True:
        m = collect(conf, textdir, exp)
        if value(m, name) >= want or time.time() > deadline:
            return m
        time.sleep(0.5)


def test_node_exporter_scrape(stack, setup, tmp_path):
    srv, conf, textdir, exp = setup
    m0 = collect(conf, textdir, exp)
    assert ours(m0) == {}       # nothing served yet

    size = 24 * MiB + 4321
    data = os.urandom(size)
    name = 'pytest-prom-%s' % uuid.uuid4().hex[:10]
    ctx = smbc.Context(auth_fn=lambda *a: ('', stack['SMB_USER'],
                                           stack['SMB_PASS']))
    url = 'smb://%s:%d/%s/%s' % (stack['SMB_HOST'], srv.port, SHARE, name)
    # one client connection stays up across the writes and reads: the
    # scrape below sees a live process's counters
    f = ctx.open(url, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    for off in range(0, size, MiB):
        f.write(data[off:off + MiB])
    f.close()
    m1 = wait_for(conf, textdir, exp, 'glusterfs2_write_bytes_total', size)
    assert value(m1, 'glusterfs2_write_bytes_total') == size
    assert value(m1, 'glusterfs2_writes_total') >= size // MiB
    assert value(m1, 'glusterfs2_read_bytes_total') == 0
    assert value(m1, 'glusterfs2_processes') == 1

    f = ctx.open(url, os.O_RDONLY)
    back = b''
    while True:
        chunk = f.read(MiB)
        if not chunk:
            break
        back += chunk
    f.close()
    assert back == data
    m2 = wait_for(conf, textdir, exp, 'glusterfs2_read_bytes_total', size)
    assert value(m2, 'glusterfs2_read_bytes_total') == size
    assert value(m2, 'glusterfs2_read_prefetch_bytes_total') + \
        value(m2, 'glusterfs2_read_gluster_bytes_total') == size
    # sequential 1 MiB reads: prefetch serves some of them
    assert value(m2, 'glusterfs2_prefetch_bytes_total') >= \
        value(m2, 'glusterfs2_read_prefetch_bytes_total')
    count = value(m2, 'glusterfs2_gluster_call_duration_seconds_count')
    assert count >= value(m2, 'glusterfs2_writes_total')
    inf = m2[('glusterfs2_gluster_call_duration_seconds_bucket',
              (('le', '+Inf'), ('share', SHARE)))]
    assert inf == count
    assert value(m2, 'glusterfs2_gluster_call_duration_seconds_sum') > 0
    ctx.unlink(url)
    del ctx

    # smbd restarted: every counter keeps its value (the process's
    # counters went to the totals), the gauges of live processes go
    counters = {k: v for k, v in ours(m2).items()
                if k[0].endswith(('_total', '_bucket', '_sum', '_count'))}
    srv.stop()
    srv.start()
    m3 = collect(conf, textdir, exp)
    for k, v in counters.items():
        assert m3.get(k) == v, (k, v, m3.get(k))
    assert value(m3, 'glusterfs2_processes') == 0
    assert value(m3, 'glusterfs2_gluster_calls_in_flight') == 0

    # and they grow on from there
    p = srv.smbclient(SHARE, 'put %s %s; del %s' % (
        os.path.join(TOP, 'README'), name, name))
    assert p.returncode == 0, p.stdout
    readme = os.path.getsize(os.path.join(TOP, 'README'))
    m4 = wait_for(conf, textdir, exp, 'glusterfs2_write_bytes_total',
                  size + readme)
    assert value(m4, 'glusterfs2_write_bytes_total') == size + readme
    for k, v in counters.items():
        assert m4.get(k, 0) >= v, (k, v, m4.get(k))

    # the dashboard asks only for metrics that were exported
    exported = {k[0] for k in m4}
    with open(DASHBOARD) as f:
        dash = json.load(f)
    exprs = [t['expr'] for p in dash['panels'] for t in p['targets']]
    exprs += [v['definition'] for v in dash['templating']['list']
              if 'definition' in v]
    assert len(exprs) >= 10
    for e in exprs:
        names = set(re.findall(r'\bglusterfs2_[a-z0-9_]+', e))
        assert names, e
        assert names <= exported, (e, names - exported)


def test_prometheus_format(stack):
    """--prometheus on the stack: every metric has HELP and TYPE, counters
    end in _total, no sample without its family."""
    p = subprocess.run([STATS, '-s', stack['SMB_CONF'], '--prometheus'],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    assert p.returncode == 0, p.stderr
    types = dict(re.findall(r'^# TYPE (\S+) (\S+)$', p.stdout, re.M))
    helps = set(re.findall(r'^# HELP (\S+) ', p.stdout, re.M))
    assert set(types) == helps
    for name, kind in types.items():
        assert name.startswith('glusterfs2_')
        assert (kind == 'counter') == name.endswith('_total'), name
    for (name, _labels) in parse_metrics(p.stdout):
        family = re.sub(r'_(bucket|sum|count)$', '', name) \
            if name not in types else name
        assert family in types, name
