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

import smbc

from conftest import Smb

CONNECTIONS = 200
SLACK = 2


def brick_pids(volume):
    p = subprocess.run(['pgrep', '-f', 'glusterfsd.*--volfile-id %s\\.' %
                        volume], stdout=subprocess.PIPE,
                       universal_newlines=True)
    pids = [int(x) for x in p.stdout.split()]
    assert pids, 'no brick processes found for volume %s' % volume
    return pids


def fd_counts(pids):
    return {pid: len(os.listdir('/proc/%d/fd' % pid)) for pid in pids}


def churn(stack, share, dirname, n):
    for _ in range(n):
        c = Smb(stack, share)
        names = c.listdir(dirname)
        assert 'f0' in names
        assert c.read(dirname + '/f0') == b'x' * 4096
        c.ctx = None
        del c


def test_brick_fds_flat_after_200_connections(stack, tmpname):
    share = 'glusterfs2'
    setup = Smb(stack, share)
    setup.mkdir(tmpname)
    for i in range(4):
        setup.write('%s/f%d' % (tmpname, i), b'x' * 4096)
    setup.ctx = None

    pids = brick_pids(stack['GLUSTER_VOLUME'])
    churn(stack, share, tmpname, 5)      # warm up
    time.sleep(1)
    before = fd_counts(pids)
    churn(stack, share, tmpname, CONNECTIONS)
    time.sleep(3)
    after = fd_counts(pids)

    for pid in pids:
        assert after[pid] <= before[pid] + SLACK, \
            'brick %d: %d descriptors before, %d after %d connections' % (
                pid, before[pid], after[pid], CONNECTIONS)

    c = Smb(stack, share)
    for i in range(4):
        c.unlink('%s/f%d' % (tmpname, i))
    c.rmdir(tmpname)
