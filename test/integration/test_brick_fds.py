"""Handles must not leak on the bricks.

The stock module leaks brick descriptors for every connection that opens a
directory (the bricks log "posix_releasedir: pfd->dir is NULL") until a
brick hits its descriptor limit.  Count each brick process's descriptors
before and after 200 connections that list a directory and read a file
through glusterfs2: the count stays flat.
"""

import os
import subprocess
import time

import pytest

from conftest import Smb
from gf2_bricks import brick_pids

CONNECTIONS = 200
SLACK = 2


def fd_counts(pids):
    return {pid: len(os.listdir('/proc/%d/fd' % pid)) for pid in pids}


def stack_smbd_children(stack):
    """PIDs of the children of the stack's smbd parent (other smbd
    instances on the machine do not count)."""
    with open(os.path.join(stack['SMB_LOGDIR'], 'run', 'smbd.pid')) as f:
        parent = int(f.read().split()[0])
    p = subprocess.run(['pgrep', '-P', str(parent)],
                       stdout=subprocess.PIPE, universal_newlines=True)
    return set(int(x) for x in p.stdout.split())


def settle(stack, before, timeout=90):
    """Wait until the smbd processes started since `before` (those that
    served the churned connections) have exited; each releases its glfs
    instance on the way out."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not (stack_smbd_children(stack) - before):
            return
        time.sleep(0.5)
    raise AssertionError('smbd processes did not exit within %d s' % timeout)


def churn(stack, share, dirname, n):
    for _ in range(n):
        c = Smb(stack, share)
        names = c.listdir(dirname)
        assert 'f0' in names
        assert c.read(dirname + '/f0') == b'x' * 4096
        c.ctx = None
        del c


def measure(stack, share, tmpname, connections):
    # the directory and files are made and removed through glusterfs2:
    # the stock module of Samba 4.22 and later cannot make a directory
    # (docs/samba-versions.md); only the churn goes through SHARE
    setup = Smb(stack, 'glusterfs2')
    setup.mkdir(tmpname)
    for i in range(4):
        setup.write('%s/f%d' % (tmpname, i), b'x' * 4096)

    pids = list(brick_pids(stack).values())
    assert pids, 'no brick of %s online' % stack['GLUSTER_VOLUME']
    baseline = stack_smbd_children(stack)
    churn(stack, share, tmpname, 3)      # warm up
    settle(stack, baseline)
    before = fd_counts(pids)
    churn(stack, share, tmpname, connections)
    settle(stack, baseline)
    after = fd_counts(pids)

    c = Smb(stack, 'glusterfs2')
    for i in range(4):
        c.unlink('%s/f%d' % (tmpname, i))
    c.rmdir(tmpname)
    return pids, before, after


def test_brick_fds_flat_after_200_connections(stack, tmpname):
    pids, before, after = measure(stack, 'glusterfs2', tmpname, CONNECTIONS)
    for pid in pids:
        assert after[pid] <= before[pid] + SLACK, \
            'brick %d: %d descriptors before, %d after %d connections' % (
                pid, before[pid], after[pid], CONNECTIONS)


def test_control_measurement_sees_stock_leak(stack, tmpname):
    """Control: the same measurement detects the stock module's leak
    (about four brick descriptors per connection with Samba 4.17.12 and
    GlusterFS 10.3), so the test above can fail."""
    n = 4
    pids, before, after = measure(stack, 'glusterfs', tmpname, n)
    grown = sum(after[p] - before[p] for p in pids)
    if grown < n:
        pytest.skip('the stock module no longer leaks brick descriptors '
                    '(%d over %d connections): no control available' %
                    (grown, n))
    assert grown >= n
