"""Strict prefetch coherence recognises every read-caching oplock.

[glusterfs2-strict] (glusterfs2:prefetch coherence = strict) prefetches and
serves prefetched data only while the handle holds a read lease or a
read-caching oplock.  smbd keeps a handle's oplock as a bit set: a batch
oplock is BATCH_OPLOCK|EXCLUSIVE_OPLOCK, so a check that compares the value
with BATCH_OPLOCK alone misses it and a batch-oplock reader (what Windows
asks for when it opens a file to copy it) never gets prefetch.

Each case reads a 16 MiB pattern file with test/tools/smb2q (64 KiB, one
in flight, every byte checked) holding the oplock or lease asked for, and
checks the level granted and the bytes the share served from prefetch
memory: most of the file with an exclusive or batch oplock or an RWH
lease, none without.
"""

import json
import os
import subprocess
import sys
import time
import uuid

import pytest

from conftest import TOP, share_counters

SHARE = 'glusterfs2-strict'
SMB2Q = os.path.join(TOP, 'test', 'tools', 'smb2q.py')
MiB = 1 << 20
SIZE = 16 * MiB


def smb2q(stack, share, action, path, *extra):
    p = subprocess.run(
        [sys.executable, SMB2Q, action, '--host', stack['SMB_HOST'],
         '--port', stack['SMB_PORT'], '--user', stack['SMB_USER'],
         '--password', stack['SMB_PASS'], '--share', share, '--file', path,
         '--size', str(SIZE), '--depth', '1', '--req-size', '64K',
         '--seed', '7'] + list(extra),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.fixture(scope='module')
def pattern_file(stack):
    name = 'strict-%s' % uuid.uuid4().hex[:8]
    smb2q(stack, 'glusterfs2', 'write', name)
    yield name
    os.unlink(os.path.join(stack['FUSE_MOUNT'], name))


def served(stack, before, want, timeout=30):
    """Prefetch bytes served since BEFORE, once they reach WANT or the
    share's smbd processes have merged their counters (TIMEOUT)."""
    deadline = time.time() + timeout
    while True:
        now = share_counters(stack, SHARE)
        n = now.get('read_bytes_prefetch', 0) - \
            before.get('read_bytes_prefetch', 0)
        got = now.get('read_bytes', 0) - before.get('read_bytes', 0)
        if (n >= want and got >= SIZE) or time.time() > deadline:
            return n, got
        time.sleep(0.5)


@pytest.mark.parametrize('ask,granted', [
    (['--oplock', 'batch'], 'oplock batch'),
    (['--oplock', 'exclusive'], 'oplock exclusive'),
    (['--lease'], 'lease RWH'),
])
def test_read_caching_handle_is_prefetched(stack, pattern_file, ask,
                                           granted):
    before = share_counters(stack, SHARE)
    out = smb2q(stack, SHARE, 'read', pattern_file, *ask)
    assert out.get('granted') == granted, out
    n, got = served(stack, before, SIZE // 2)
    assert got >= SIZE, 'read counters did not settle: %r' % got
    assert n > SIZE // 2, \
        '%s: only %d of %d bytes served from prefetch' % (granted, n, SIZE)


def test_no_oplock_is_never_prefetched(stack, pattern_file):
    before = share_counters(stack, SHARE)
    out = smb2q(stack, SHARE, 'read', pattern_file)
    assert out.get('granted') == 'none', out
    n, got = served(stack, before, 1, timeout=10)
    assert got >= SIZE
    assert n == 0, '%d bytes served from prefetch without an oplock' % n
