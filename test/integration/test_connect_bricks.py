"""A new glusterfs2 instance checks that it reaches every brick.

glfs_init returns once each brick connection has come up or failed, and
GlusterFS tries a failed one again only seconds later; meanwhile that
process serves part of the volume with no error (a listing without the
entries of the missing brick).  At connect glusterfs2 compares the
bricks the root's pathinfo names with the volfile's, connects once more
when one is missing, and warns naming the brick when it is still missing.

The stack's volume is plain distribute over two bricks: with one brick
killed, a file hashed to it is missing from a listing, and the connect
logs that it connected once more and is serving without that brick.  With
the brick back, a new connection lists every file and logs neither line.
"""

import os
import subprocess
import time

from gf2_bricks import brick_pids
from gf2_logs import logs, new_text

RETRY = 'not connected after init; connecting once more'
WARN = 'serving without brick'


def gl(*args, check=True):
    return subprocess.run(['gluster', '--mode=script'] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=check, timeout=120)


def smb_ls(stack, dirname):
    p = subprocess.run(
        ['smbclient', '//%s/glusterfs2' % stack['SMB_HOST'],
         '-p', stack['SMB_PORT'],
         '-U', '%s%%%s' % (stack['SMB_USER'], stack['SMB_PASS']),
         '-D', dirname, '-c', 'ls'], stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, universal_newlines=True, timeout=120)
    assert p.returncode == 0, p.stdout
    names = set()
    for line in p.stdout.splitlines():
        parts = line.split()
        if len(parts) > 1 and parts[0] not in ('.', '..') and \
                line.startswith('  '):
            names.add(parts[0])
    return names


def bricks_back(stack, killed):
    """Start the killed brick again and wait until it is online."""
    vol = stack['GLUSTER_VOLUME']
    nb = len(stack['BRICK_DIRS'].split())
    deadline = time.monotonic() + 90
    while True:
        gl('volume', 'start', vol, 'force', check=False)
        now = brick_pids(stack)
        if len(now) == nb and killed not in now.values():
            return
        assert time.monotonic() < deadline, 'bricks not back: %r' % now
        time.sleep(2)


def test_connect_with_a_brick_down_says_so(stack, tmpname):
    fuse = os.path.join(stack['FUSE_MOUNT'], tmpname)
    os.mkdir(fuse)
    names = {'f%02d' % i for i in range(16)}
    for n in names:
        with open(os.path.join(fuse, n), 'w') as f:
            f.write(n)
    # the brick that holds some of them (distribute hashes names)
    bricks = stack['BRICK_DIRS'].split()
    on = {b: {n for n in names if os.path.exists(os.path.join(b, tmpname,
                                                               n))}
          for b in bricks}
    victim = next(b for b in bricks if on[b])
    assert on[victim] != names, 'every file on one brick: %r' % on
    pid = brick_pids(stack)[victim]

    os.kill(pid, 9)
    try:
        deadline = time.monotonic() + 30
        while os.path.exists('/proc/%d' % pid):
            assert time.monotonic() < deadline
            time.sleep(0.2)
        before = logs(stack)
        seen = smb_ls(stack, tmpname)
        time.sleep(1)
        text = new_text(stack, before)
        # what the brick holds is missing, and the log says why
        assert seen == names - on[victim], seen
        assert RETRY in text, text[-3000:]
        assert WARN in text, text[-3000:]
        warned = [ln for ln in text.splitlines() if WARN in ln]
        assert victim in warned[0], warned
    finally:
        bricks_back(stack, pid)

    # every brick up: a new connection lists everything, and no word of it
    deadline = time.monotonic() + 60
    while True:
        before = logs(stack)
        seen = smb_ls(stack, tmpname)
        time.sleep(1)
        text = new_text(stack, before)
        if seen == names:
            break
        assert time.monotonic() < deadline, seen
        time.sleep(2)
    assert RETRY not in text, text[-3000:]
    assert WARN not in text, text[-3000:]
