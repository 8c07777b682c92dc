"""Failover of a public address of test/cluster while a client writes and
another reads through it: the node holding the address is disabled
(`ctdb disable`), killed (its ctdbd and smbd SIGKILL), or cut off (its
link down); the node holding the cluster lock (CTDB's leader) is killed
the same way (its lock helper dies with the node).  Each scenario runs on
the share of glusterfs2 and, side by side, on the same volume served by
the stock vfs_glusterfs and re-exported from a FUSE mount inside each
node (test/cluster env STOCK_SHARE, FUSE_SHARE).  The address moves to another node, both clients reconnect to
the same address and go on from the last acknowledged offset, and the
checksums hold: every byte read is the file's, the written file on the
volume is what the writer sent.  The time from the failure until the
address is held by another node and serves a new session there is
printed (FAILOVER lines), never asserted.  After the lock holder's death
a surviving node takes the cluster lock and none is banned.

test_brick_killed: during the same transfers one brick of the data volume
and one of the cluster lock's volume are killed (SIGKILL); the address
stays where it is, the transfers finish with their checksums, the lock is
never given up (the leader stays) and no node is banned; the bricks are
started again and healed.

The cluster is brought up when it is not up and taken down at the end if
these tests brought it up; each scenario leaves it healthy again.
"""

import pytest

import gf2_cluster
from gf2_failover import brick_killed, failover


@pytest.fixture(scope='module')
def cluster_env():
    e = gf2_cluster.cluster()
    yield e
    gf2_cluster.take_down()


# the share each scenario runs on: glusterfs2's, and the two ways of
# serving the volume that it replaces
SHARES = {'glusterfs2': 'SHARE', 'stock': 'STOCK_SHARE', 'fuse': 'FUSE_SHARE'}


@pytest.fixture(params=list(SHARES))
def cl(request, cluster_env):
    """test/cluster env with SHARE set to the share under test"""
    return dict(cluster_env, SHARE=cluster_env[SHARES[request.param]])


@pytest.mark.parametrize('how', ['disable', 'kill', 'cutoff', 'lockholder'])
def test_failover(cl, how):
    failover(cl, how)


def test_brick_killed(cl):
    brick_killed(cl)
