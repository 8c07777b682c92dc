"""A copy-chunk whose last switch back to the destination's user fails.

The module's copy-chunk reads the source as the source handle's user and
writes the destination as the destination's, switching between them with
smbd's change_to_user_and_service_by_fsp(); when the copy ends, smbd must
go on as the destination handle's user.  That last switch can fail (the
session or the share can no longer be entered): the copy must then fail
with an error, not panic smbd and take every client of that process with
it.

A private smbd (the stack's port plus its own offset) serves the stack's
volume as [cc], with fail_change_user.so preloaded: a test-only shim,
compiled here, that makes one chosen call of the module's to that
function fail and passes every other call (smbd's own included) through.
A copy of one chunk makes three such calls: to the source's user when it
starts, to the destination's after the read, and back to the
destination's at the end; the third is made to fail.  Then the copy's
answer must be an error, the smbd child serving the client must still be
alive and answer, and no smbd may have logged a PANIC.  A second copy
without the fault, in a new process, checks the shim itself: it succeeds
with the data copied.
"""

import os
import shutil
import struct
import subprocess
import uuid

import pytest

from gf2_private_smbd import PrivateSmbd
from gf2_smb2 import (Client, FSCTL_SRV_COPYCHUNK_WRITE, copy_source_and_key,
                      ioctl_packet, smb2q)

HERE = os.path.dirname(os.path.abspath(__file__))
CHUNK = 64 * 1024
FAIL_CALL = 3   # the switch back at the end of a one-chunk copy


class ShimSmbd(PrivateSmbd):
    """A private smbd with the fault shim preloaded."""

    shim = None
    fail_call = None

    def smbd_env(self):
        env = super().smbd_env() or dict(os.environ)
        pre = env.get('LD_PRELOAD', '')
        env['LD_PRELOAD'] = (pre + ' ' + self.shim).strip()
        env['GF2_FAIL_MODULE'] = self.module + '.so'
        if self.fail_call is not None:
            env['GF2_FAIL_CALL'] = str(self.fail_call)
        else:
            env.pop('GF2_FAIL_CALL', None)
        return env


@pytest.fixture(scope='module')
def shim(tmp_path_factory):
    if shutil.which('cc') is None:
        pytest.skip('no C compiler here to build the fault shim '
                    'fail_change_user.c')
    out = str(tmp_path_factory.mktemp('shim') / 'fail_change_user.so')
    subprocess.run(['cc', '-shared', '-fPIC', '-Wall', '-Werror', '-o', out,
                    os.path.join(HERE, 'fail_change_user.c'), '-ldl'],
                   check=True)
    return out


def start(stack, shim, fail_call):
    s = ShimSmbd('copychunkident', stack)
    s.shim = shim
    s.fail_call = fail_call
    s.write_conf([], [
        ('cc', s.gf2_share([('posix locking', 'no')]))])
    s.start()
    return s.client_env(), s


def copy_one_chunk(env, src, dst):
    """(copy's status, response, client) of a one-chunk copy src -> dst."""
    cl = Client(env, 'cc')
    _sfid, dfid, key = copy_source_and_key(cl, src, dst)
    blob = key + struct.pack('<II', 1, 0) + struct.pack('<QQII', 0, 0,
                                                        CHUNK, 0)
    st, rsp = cl.request(ioctl_packet(cl.conn.tid, dfid,
                                      FSCTL_SRV_COPYCHUNK_WRITE, blob, 12))
    return st, rsp, cl


@pytest.mark.parametrize('fail', [False, True],
                         ids=['no-fault', 'switch-back-fails'])
def test_copy_end_identity_failure(stack, shim, fail):
    env, s = start(stack, shim, FAIL_CALL if fail else None)
    tag = uuid.uuid4().hex[:10]
    src, dst = 'cci-src-%s.dat' % tag, 'cci-dst-%s.dat' % tag
    data = os.urandom(CHUNK)
    with open(os.path.join(env['FUSE_MOUNT'], src), 'wb') as f:
        f.write(data)
    os.chmod(os.path.join(env['FUSE_MOUNT'], src), 0o666)
    try:
        st, rsp, cl = copy_one_chunk(env, src, dst)
        # the serving process survived and answers
        cl.alive()
        if fail:
            assert st != 0, 'the copy succeeded though smbd could not ' \
                'switch back to the destination handle\'s user'
            assert smb2q.status_name(st) == 'STATUS_INTERNAL_ERROR', \
                smb2q.status_name(st)
        else:
            assert st == 0, smb2q.status_name(st)
            ooff, _ = struct.unpack_from('<II', rsp, 64 + 32)
            written = struct.unpack_from('<III', rsp, ooff)
            assert written == (1, 0, CHUNK), written
        cl.drop()
        if not fail:
            with open(os.path.join(env['FUSE_MOUNT'], dst), 'rb') as f:
                assert f.read() == data
        logs = s.logs()
        assert 'PANIC' not in logs and 'INTERNAL ERROR' not in logs, logs
    finally:
        s.stop()
        for n in (src, dst):
            try:
                os.unlink(os.path.join(env['FUSE_MOUNT'], n))
            except OSError:
                pass
