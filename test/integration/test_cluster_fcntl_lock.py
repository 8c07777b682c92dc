"""The cluster lock's failure scenarios with CTDB's own fcntl helper on a
FUSE mount of the lock volume, beside ours (test_cluster_failover.py runs
them with ctdb_mutex_glusterfs2_helper): the lock holder killed, the node
holding the address cut off, and a brick of the data volume and one of
the lock volume killed, each during the same transfers through glusterfs2's
share with the same checks (the address moves or stays, the checksums
hold, a surviving node takes the lock, nobody stays banned).

The cluster is brought up, or its nodes restarted, with `test/cluster up
--lock fcntl` (every node FUSE-mounts the lock volume on /run/gf2cl-lock
and CTDB's `cluster lock` names the file there); at the end the nodes go
back to our helper, or the cluster is taken down if these tests brought
it up (neither when the next test uses the cluster: gf2_cluster.release).
"""

import pytest

import gf2_cluster
import gf2_failover


@pytest.fixture(scope='module')
def cl():
    e = gf2_cluster.cluster(lock='fcntl')
    assert e['LOCK'] == 'fcntl' and \
        e['LOCK_HELPER'] == 'ctdb_mutex_fcntl_helper', e
    yield e
    gf2_cluster.release(lock='gfapi')


@pytest.mark.parametrize('how', ['lockholder', 'cutoff'])
def test_failover_with_fcntl_lock(cl, how):
    gf2_failover.failover(cl, how)


def test_brick_killed_with_fcntl_lock(cl):
    gf2_failover.brick_killed(cl)
