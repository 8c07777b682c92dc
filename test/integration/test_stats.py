"""Counters for admins: tools/glusterfs2-stats after a known workload.

Uses the glusterfs2-longage share, which only the upcall test also uses
(tests run one after another), so that the counters' differences before
and after each step are this test's own.  Every smbd process adds its
counters to the totals when its tree connect ends, so each step is an
smbclient run (its own connection) and the test waits for the totals.
"""

import os
import subprocess
import time

import smbc

from conftest import STATS_TOOL, share_counters

SHARE = 'glusterfs2-longage'
MiB = 1 << 20
DEFAULT_MAX_MEMORY = 64 * MiB       # glusterfs2:prefetch max memory


def smbclient(stack, cmd):
    p = subprocess.run(
        ['smbclient', '//%s/%s' % (stack['SMB_HOST'], SHARE),
         '-p', stack['SMB_PORT'],
         '-U', '%s%%%s' % (stack['SMB_USER'], stack['SMB_PASS']),
         '-c', cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        universal_newlines=True, timeout=300)
    assert p.returncode == 0, p.stdout


def settle(stack, before, key, want, timeout=30):
    """Wait until counter key grew by at least want (the smbd that served
    the step has merged its counters), then return the counters."""
    deadline = time.time() + timeout
    while True:
        now = share_counters(stack, SHARE)
        if now.get(key, 0) - before.get(key, 0) >= want:
            # and nothing of ours is still live
            if now.get('inflight', 0) == 0:
                return now
        if time.time() > deadline:
            raise AssertionError('counter %s did not grow by %d: %r -> %r'
                                 % (key, want, before.get(key), now.get(key)))
        time.sleep(0.5)


def delta(a, b, k):
    return b.get(k, 0) - a.get(k, 0)


def server_max(stack, param):
    p = subprocess.run(['testparm', '-s', '--parameter-name=' + param,
                        stack['SMB_CONF']], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, universal_newlines=True)
    return int(p.stdout.strip().splitlines()[-1])


def ceil_div(a, b):
    return -(-a // b)


def test_counters_add_up(stack, tmp_path, tmpname):
    size = 64 * MiB + 4321
    src = tmp_path / 'src'
    src.write_bytes(os.urandom(size))
    dst = tmp_path / 'dst'

    # what the workload implies, independently of the counters: SMB
    # requests of at most smbd's maximum size, each at least one Gluster
    # call
    max_write = server_max(stack, 'smb2 max write')
    max_read = server_max(stack, 'smb2 max read')
    s0 = share_counters(stack, SHARE)
    smbclient(stack, 'put %s %s' % (src, tmpname))
    s1 = settle(stack, s0, 'write_bytes', size)
    assert delta(s0, s1, 'write_bytes') == size
    assert os.path.getsize(os.path.join(stack['FUSE_MOUNT'], tmpname)) == \
        size
    assert delta(s0, s1, 'writes') >= ceil_div(size, max_write)
    assert delta(s0, s1, 'gluster_calls') >= delta(s0, s1, 'writes')
    assert delta(s0, s1, 'read_bytes') == 0

    smbclient(stack, 'get %s %s' % (tmpname, dst))
    assert dst.read_bytes() == src.read_bytes()
    s2 = settle(stack, s1, 'read_bytes', size)
    rb = delta(s1, s2, 'read_bytes')
    assert rb == size
    assert delta(s1, s2, 'reads') >= ceil_div(size, max_read)
    # every read not served from prefetch memory, and every prefetch
    # window, is at least one Gluster call of at most max_read bytes
    assert delta(s1, s2, 'gluster_calls') >= \
        ceil_div(delta(s1, s2, 'read_bytes_gluster'), max_read) + \
        ceil_div(delta(s1, s2, 'prefetch_bytes'), max_read)
    # what was served from prefetch memory had been prefetched; nothing
    # is prefetched past the end of the file
    assert delta(s1, s2, 'read_bytes_prefetch') <= \
        delta(s1, s2, 'prefetch_bytes') <= size
    # every byte returned came from prefetch memory or from Gluster
    assert delta(s1, s2, 'read_bytes_prefetch') + \
        delta(s1, s2, 'read_bytes_gluster') == rb
    # smbclient reads 8 MiB at a time: reads that large start no prefetch
    # (glusterfs2:prefetch direct read size, 1M) and come from Gluster
    assert delta(s1, s2, 'read_bytes_gluster') == rb
    assert delta(s1, s2, 'prefetch_bytes') == 0
    # and each goes to Gluster as pieces below 128 KiB, all in flight
    # together (gfapi reuses reply buffers up to that size; a MiB or more
    # faults in fresh pages for every reply): at least one call per
    # 124 KiB read
    assert delta(s1, s2, 'gluster_calls') >= ceil_div(rb, 124 * 1024)
    assert delta(s1, s2, 'write_bytes') == 0

    # a sequential reader of 64 KiB blocks is served mostly from prefetch
    ctx = smbc.Context(auth_fn=lambda *a: ('WORKGROUP', stack['SMB_USER'],
                                           stack['SMB_PASS']))
    f = ctx.open('smb://%s:%s/%s/%s' % (stack['SMB_HOST'], stack['SMB_PORT'],
                                        SHARE, tmpname), os.O_RDONLY)
    got = []
    while True:
        b = f.read(65536)
        if not b:
            break
        got.append(b)
    f.close()
    assert b''.join(got) == src.read_bytes()
    s3 = settle(stack, s2, 'read_bytes', size)
    assert delta(s2, s3, 'read_bytes') == size
    assert delta(s2, s3, 'read_bytes_prefetch') + \
        delta(s2, s3, 'read_bytes_gluster') == size
    assert delta(s2, s3, 'read_bytes_prefetch') > size // 2
    assert 0 <= delta(s2, s3, 'prefetch_unused') <= \
        delta(s2, s3, 'prefetch_bytes')
    # what prefetch held counts in the budget's peak (the largest of one
    # process, not a sum), within the share's prefetch max memory (the
    # default, 64M)
    assert 0 < s3['mem_peak'] <= DEFAULT_MAX_MEMORY
    s2 = s3

    # the latency histogram counts every completed Gluster call of the
    # steps
    buckets = sum(delta(s0, s2, k) for k in s2 if k.startswith('lat_'))
    assert buckets == delta(s0, s2, 'gluster_calls') > 0
    assert s2['gluster_errors'] == s0.get('gluster_errors', 0)
    assert s2['inflight'] == 0
    assert s2['latency_us']['p50'] is not None

    smbclient(stack, 'del %s' % tmpname)


def test_tool_text_output_and_bad_arguments(stack, tmp_path, tmpname):
    """After a write and a read through SHARE, the text output has the
    share's block with the figures the JSON output gives."""
    src = tmp_path / 'src'
    src.write_bytes(os.urandom(200000))
    before = share_counters(stack, SHARE)
    smbclient(stack, 'put %s %s; get %s %s; del %s' % (
        src, tmpname, tmpname, tmp_path / 'back', tmpname))
    assert (tmp_path / 'back').read_bytes() == src.read_bytes()
    now = settle(stack, before, 'reads', 1)
    assert delta(before, now, 'writes') >= 1, (before, now)
    p = subprocess.run([STATS_TOOL, '-s', stack['SMB_CONF'], '--share', SHARE],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    assert p.returncode == 0, p.stderr
    assert 'no glusterfs2 counters' not in p.stdout, p.stdout
    assert p.stdout.startswith('[%s]' % SHARE), p.stdout
    assert 'reads %d, ' % now['reads'] in p.stdout, (now, p.stdout)
    assert 'writes %d, ' % now['writes'] in p.stdout, (now, p.stdout)
    assert 'fsyncs %d' % now['fsyncs'] in p.stdout, (now, p.stdout)
    assert 'hit rate ' in p.stdout, p.stdout
    p = subprocess.run([STATS_TOOL, '--bogus'], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    assert p.returncode == 2
    assert 'unrecognized arguments' in p.stderr
