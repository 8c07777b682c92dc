"""glusterfs2:event threads sets gfapi's network threads of each smbd.

A private smbd serves two shares of the module on the stack's volume:
one with the option unset (the volume's client.event-threads, 2 unless
the volume sets it) and one with `glusterfs2:event threads = 1`.  For
each, one client connects, lists the share and reads a file written
through the FUSE mount (checksum compared) while the test counts the
serving smbd's gfapi network threads (/proc/PID/task/*/comm, glfs_epoll*)
and all its threads: with the option one network thread and one thread
fewer in all.  docs/scale.md has what that saves per connection.
"""

import hashlib
import os
import time
import uuid

import pytest
import smbc

from gf2_private_smbd import PrivateSmbd


def threads_of(pid):
    """(all threads, gfapi network threads) of a process."""
    task = '/proc/%d/task' % pid
    names = []
    for t in os.listdir(task):
        try:
            with open(os.path.join(task, t, 'comm')) as f:
                names.append(f.read().strip())
        except OSError:
            pass
    return len(names), sum(1 for n in names if n.startswith('glfs_epoll'))


@pytest.fixture(scope='module')
def srv(stack):
    # the stack's port plus 501: the private smbd slots of the tests end
    # below the ephemeral range for stack ports above 4450
    s = PrivateSmbd('eventthreads', stack, port=int(stack['SMB_PORT']) + 501)
    s.write_conf([], [('gf2', s.gf2_share()),
                      ('gf2one', s.gf2_share(
                          extra=[('glusterfs2:event threads', '1')]))])
    s.start()
    try:
        yield s
    finally:
        s.stop()


def serve_one(srv, stack, share, name, data):
    env = srv.client_env()
    ctx = smbc.Context(auth_fn=lambda *a: ('WORKGROUP', env['SMB_USER'],
                                           env['SMB_PASS']))
    base = 'smb://127.0.0.1:%s/%s/' % (env['SMB_PORT'], share)
    listed = [e.name for e in ctx.opendir(base).getdents()]
    assert name in listed
    f = ctx.open(base + name, os.O_RDONLY)
    got = b''
    while True:
        b = f.read(1 << 20)
        if not b:
            break
        got += b
    f.close()
    assert hashlib.sha256(got).hexdigest() == \
        hashlib.sha256(data).hexdigest()
    kids = srv.client_children()
    assert len(kids) == 1, 'one serving smbd expected: %r' % kids
    counts = threads_of(kids[0])
    del ctx
    return counts


def test_event_threads_one(srv, stack):
    name = 'evth-%s.dat' % uuid.uuid4().hex[:8]
    data = os.urandom(3 << 20)
    path = os.path.join(stack['FUSE_MOUNT'], name)
    with open(path, 'wb') as f:
        f.write(data)
    try:
        default = serve_one(srv, stack, 'gf2', name, data)
        # the first connection's smbd exits before the second connects
        deadline = time.time() + 60
        while srv.client_children() and time.time() < deadline:
            time.sleep(0.2)
        one = serve_one(srv, stack, 'gf2one', name, data)
    finally:
        os.unlink(path)
    assert default[1] >= 2, 'default: %d network threads' % default[1]
    assert one[1] == 1, 'event threads = 1: %d network threads' % one[1]
    assert one[0] == default[0] - (default[1] - 1), \
        'threads: %d with the option, %d without' % (one[0], default[0])
