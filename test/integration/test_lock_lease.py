"""`glusterfs2:lock check = lease`: accepted, answered as getlk.

The bricks drop a client's read leases when its connection to them
breaks, without a recall, and gfapi 10.3 tells its application nothing
of it, so a lease cannot keep the default's promise across a brick
restart (test_brick_restart_drops_the_lease).  The option is kept for
existing smb.conf files: it logs that it behaves as getlk, and every
check asks the bricks.

A private smbd serves two shares with the option: [leasevol] on a
one-brick volume of its own with features.leases on (the bricks started
with it), [noleasevol] on the stack's volume, without leases.  Prefetch
is off on both, so an SMB read goes to the bricks.  The other client is a
process on the FUSE mount of the same volume.  On each share:

- after SMB reads, the other client's F_SETLK lock of a range makes the
  next SMB read and write of it fail with FILE_LOCK_CONFLICT, at once;
- the other client's write lands, and the next SMB read sees its bytes;
- the other client's truncation lands, and the next SMB read past the
  new end finds the end of the file;
- a handle that has read sets its own last write time (SET_INFO
  FileBasicInformation, what copy tools send) and closes after writes
  (smbd sets the write time then): both answer STATUS_SUCCESS and the
  time lands;
- another head's open for write, the other client's locks on a
  descriptor opened before the reads, and an editor's save over the name
  are served promptly and seen by the next read;
- after a brick restart, a lock of the other client makes the next SMB
  read fail with FILE_LOCK_CONFLICT.

On [leasevol] the bricks see one LK fop per read and no LEASE fop, and
the smbd logs that the option behaves as getlk.
"""

import fcntl
import os
import signal
import struct
import time

import pytest

from gf2_bricks import brick_pids, gluster, gluster_set, \
    one_brick_volume, profile_fops, restart_volume
from gf2_private_smbd import PrivateSmbd, private_port
from gf2_locks import Holder, open_rw
from gf2_smb2 import STATUS, Client, s3, set_info_packet, smb2q, \
    status_name

# above quick-read's max-file-size (64 KiB), whose copy of a small file
# in gfapi's client graph lives for its cache-timeout (1 s) whatever
# another client writes
SIZE = 1024 * 1024
OK = 0
CONFLICT = STATUS['STATUS_FILE_LOCK_CONFLICT']
# a recall takes 10-25 ms on an idle machine; a lock the bricks hold until
# their recall timeout (60 s) must fail this
PROMPT_S = 5.0
# struct flock on Linux x86_64: l_type, l_whence, l_start, l_len, l_pid
FLOCK = struct.Struct('hhqqi')
SHARES = ('leasevol', 'noleasevol')


@pytest.fixture(scope='module', autouse=True)
def need_impacket():
    if smb2q is None or smb2q.smb3 is None:
        pytest.skip('python3-impacket is not installed')


@pytest.fixture(scope='module')
def lease_volume(stack):
    """(name, FUSE mount) of a one-brick volume with features.leases on,
    its brick restarted since (the leases translator reads the option
    when the brick starts)."""
    gen = one_brick_volume(stack, '-lease')
    vol, mount = next(gen)
    try:
        gluster_set(vol, 'features.leases', 'on')
        restart_volume(vol, mount)
        yield vol, mount
    finally:
        gen.close()


@pytest.fixture(scope='module')
def lease_smbd(stack, lease_volume):
    """The private smbd serving [leasevol] and [noleasevol]."""
    # the port of test_lock_default.py's smbd: never up at the same time
    s = PrivateSmbd('lock-lease', stack,
                    port=private_port(stack, 'lockdefault'))
    opts = [('glusterfs2:lock check', 'lease'), ('glusterfs2:prefetch', 'no')]
    s.write_conf([], [
        ('leasevol', s.gf2_share(opts, vol=lease_volume[0])),
        ('noleasevol', s.gf2_share(opts))])
    s.start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(scope='module')
def srv(stack, lease_volume, lease_smbd):
    """The private smbd's client env and {share: FUSE mount of its
    volume}."""
    return lease_smbd.client_env(), {'leasevol': lease_volume[1],
                                     'noleasevol': stack['FUSE_MOUNT']}


def io_status(cl, fid, off=0):
    """(read status, write status) of [off, off + 4096)."""
    return cl.read(fid, off, 4096)[0], cl.write(fid, off + 2048,
                                                 b'x' * 16)[0]


def fresh_file(mount, name, data):
    path = os.path.join(mount, name)
    with open(path, 'wb') as f:
        f.write(data)
    os.chmod(path, 0o666)
    return path


@pytest.mark.parametrize('share', SHARES)
def test_fuse_lock_fails_next_read(srv, share):
    """Reads pass; the other client's lock of [0, 4096) is granted
    promptly and the very next SMB read and write of the range fail with
    FILE_LOCK_CONFLICT, as they do when every check asks the bricks; after
    its unlock they pass again."""
    env, mounts = srv
    name = 'locklease-%d-%s.dat' % (os.getpid(), share)
    path = fresh_file(mounts[share], name, bytes(SIZE))
    cl, fid = open_rw(env, share, name)
    holder = None
    try:
        before = [io_status(cl, fid) for _ in range(3)]
        t0 = time.monotonic()
        holder = Holder(path, 0, 4096)      # returns once granted
        during = io_status(cl, fid)
        took = time.monotonic() - t0
        outside = io_status(cl, fid, 8192)
        holder.release()
        after = io_status(cl, fid)
        cl.close(fid)
    finally:
        if holder is not None:
            holder.release()
        cl.drop()
        os.unlink(path)
    assert before == [(OK, OK)] * 3
    assert (during, outside, after) == \
        ((CONFLICT, CONFLICT), (OK, OK), (OK, OK))
    assert took < PROMPT_S, 'lock and conflicting I/O took %.1f s' % took


@pytest.mark.parametrize('share', SHARES)
def test_fuse_write_seen_by_next_read(srv, share):
    """The other client writes new bytes while the handle reads (its lease
    held on [leasevol]): the write lands promptly and the next SMB read
    returns the new bytes."""
    env, mounts = srv
    name = 'leasewrite-%d-%s.dat' % (os.getpid(), share)
    path = fresh_file(mounts[share], name, bytes(SIZE))
    new = bytes((i * 13 + 5) % 251 for i in range(4096))
    cl, fid = open_rw(env, share, name)
    try:
        first = [cl.read(fid, 0, 4096) for _ in range(3)]
        t0 = time.monotonic()
        fd = os.open(path, os.O_WRONLY)
        try:
            assert os.pwrite(fd, new, 0) == len(new)
            os.fsync(fd)
        finally:
            os.close(fd)
        took = time.monotonic() - t0
        status, data = cl.read(fid, 0, 4096)
        cl.close(fid)
    finally:
        cl.drop()
        os.unlink(path)
    assert first == [(OK, bytes(4096))] * 3
    assert (status, data) == (OK, new)
    assert took < PROMPT_S, 'the FUSE write took %.1f s' % took


@pytest.mark.parametrize('share', SHARES)
def test_fuse_truncate_seen_by_next_read(srv, share):
    """The other client truncates the file while the handle reads (its
    lease held on [leasevol]): the truncation lands promptly, the next SMB
    read before the new end returns the file's bytes and the next one past
    it finds the end of the file."""
    env, mounts = srv
    name = 'leasetrunc-%d-%s.dat' % (os.getpid(), share)
    data = bytes((i * 7 + 3) % 251 for i in range(SIZE))
    path = fresh_file(mounts[share], name, data)
    cl, fid = open_rw(env, share, name)
    try:
        first = [cl.read(fid, 65536, 4096) for _ in range(3)]
        t0 = time.monotonic()
        os.truncate(path, 8192)
        took = time.monotonic() - t0
        inside = cl.read(fid, 4096, 4096)
        past = cl.read(fid, 65536, 4096)[0]
        cl.close(fid)
    finally:
        cl.drop()
        os.unlink(path)
    assert first == [(OK, data[65536:65536 + 4096])] * 3
    assert inside == (OK, data[4096:8192])
    assert past == STATUS['STATUS_END_OF_FILE']
    assert took < PROMPT_S, 'the FUSE truncation took %.1f s' % took


FILE_BASIC_INFORMATION = 4
# 2020-01-02 03:04:05 UTC, in seconds and in 100 ns units since 1601
SET_MTIME = 1577934245
NT_EPOCH_S = 11644473600


def set_write_time(cl, fid, unix_s):
    """SET_INFO FileBasicInformation with only LastWriteTime: status."""
    buf = struct.pack('<QQQQII', 0, 0, (unix_s + NT_EPOCH_S) * 10 ** 7, 0,
                      0, 0)
    status, _rsp = cl.request(set_info_packet(cl.conn, fid,
                                              FILE_BASIC_INFORMATION, buf))
    return status


def close_with_write_time(cl, fid):
    """CLOSE with SMB2_CLOSE_FLAG_POSTQUERY_ATTRIB: (status, the file's
    last write time in whole Unix seconds, as smbd read it at close)."""
    status, rsp = cl.request(smb2q.RawPacket(
        s3.SMB2_CLOSE, cl.conn.tid, struct.pack('<HHI16s', 24, 1, 0, fid)))
    if status != OK:
        return status, None
    (nt,) = struct.unpack_from('<Q', rsp, 64 + 24)
    return status, nt // 10 ** 7 - NT_EPOCH_S


@pytest.mark.parametrize('share', SHARES)
def test_set_times_after_reads(srv, share):
    """A handle opened to read, write and set attributes reads three
    times, then sets its last write time: STATUS_SUCCESS, the next read
    passes, and the CLOSE answers with the time set."""
    env, mounts = srv
    name = 'leasetimes-%d-%s.dat' % (os.getpid(), share)
    path = fresh_file(mounts[share], name, bytes(SIZE))
    cl = Client(env, share)
    try:
        status, fid = cl.create(
            name, disposition=s3.FILE_OPEN,
            access=s3.FILE_READ_DATA | s3.FILE_WRITE_DATA |
            s3.FILE_READ_ATTRIBUTES | s3.FILE_WRITE_ATTRIBUTES |
            s3.SYNCHRONIZE)
        assert status == OK, status_name(status)
        reads = [cl.read(fid, i * 4096, 4096)[0] for i in range(3)]
        t0 = time.monotonic()
        setinfo = set_write_time(cl, fid, SET_MTIME)
        took = time.monotonic() - t0
        after = cl.read(fid, 0, 4096)[0]
        closed, mtime = close_with_write_time(cl, fid)
    finally:
        cl.drop()
        os.unlink(path)
    assert reads == [OK] * 3
    assert (setinfo, after, closed) == (OK, OK, OK), \
        (status_name(setinfo), status_name(after), status_name(closed))
    assert mtime == SET_MTIME
    assert took < PROMPT_S, 'SET_INFO took %.1f s' % took


@pytest.mark.parametrize('share', SHARES)
def test_close_after_writes(srv, share):
    """A handle reads, writes, reads, closes: the CLOSE (where smbd sets
    the write time of a handle that wrote) answers STATUS_SUCCESS and
    the bytes written are the file's (read on a new handle)."""
    env, mounts = srv
    name = 'leaseclose-%d-%s.dat' % (os.getpid(), share)
    path = fresh_file(mounts[share], name, bytes(SIZE))
    new = bytes((i * 11 + 1) % 251 for i in range(4096))
    cl, fid = open_rw(env, share, name)
    try:
        first = [cl.read(fid, i * 4096, 4096)[0] for i in range(3)]
        wrote = cl.write(fid, 8192, new)
        again = cl.read(fid, 0, 4096)[0]
        closed = cl.close(fid)
        cl2, fid2 = open_rw(env, share, name)
        try:
            got = cl2.read(fid2, 8192, 4096)
            cl2.close(fid2)
        finally:
            cl2.drop()
    finally:
        cl.drop()
        os.unlink(path)
    assert first == [OK] * 3
    assert (wrote, again) == ((OK, len(new)), OK)
    assert closed == OK, status_name(closed)
    assert got == (OK, new)


@pytest.mark.parametrize('share', SHARES)
def test_save_over_the_name(srv, share):
    """A read-only handle is open when the other client saves the file as
    editors do (a new file written, then renamed over the name); then the
    handle reads.  Its checks answer for its own file: the other client's
    append to the new file lands promptly (no recall of a lease the
    module does not know it holds), and its lock of the handle's old file
    (opened through a second name of it) makes the next SMB read fail
    with FILE_LOCK_CONFLICT."""
    env, mounts = srv
    name = 'leasesave-%d-%s.dat' % (os.getpid(), share)
    old = bytes((i * 7 + 3) % 251 for i in range(SIZE))
    path = fresh_file(mounts[share], name, old)
    keep = path + '.old'
    tmp = path + '.tmp'
    os.link(path, keep)
    holder = None
    cl = Client(env, share)
    try:
        status, fid = cl.create(
            name, disposition=s3.FILE_OPEN,
            access=s3.FILE_READ_DATA | s3.FILE_READ_ATTRIBUTES |
            s3.SYNCHRONIZE)
        assert status == OK, status_name(status)
        fresh_file(mounts[share], os.path.basename(tmp), bytes(SIZE))
        os.rename(tmp, path)
        # past the lookup caches' timeouts (md-cache: 1 s by default;
        # 10 min with the samba option group, where the bricks'
        # invalidation upcalls end them): a lookup of the name now finds
        # the new file
        time.sleep(2)
        reads = [cl.read(fid, i * 4096, 4096) for i in range(3)]
        t0 = time.monotonic()
        with open(path, 'ab') as f:
            f.write(b'appended')
            f.flush()
            os.fsync(f.fileno())
        took = time.monotonic() - t0
        holder = Holder(keep, 0, 4096)
        locked = cl.read(fid, 0, 4096)[0]
        holder.release()
        cl.close(fid)
    finally:
        if holder is not None:
            holder.release()
        cl.drop()
        for p in (path, keep, tmp):
            try:
                os.unlink(p)
            except OSError:
                pass
    assert reads == [(OK, old[i * 4096:(i + 1) * 4096]) for i in range(3)]
    assert took < PROMPT_S, 'the append to the new file took %.1f s' % took
    assert locked == CONFLICT, status_name(locked)


@pytest.mark.parametrize('share', SHARES)
def test_second_head_opens_for_write(srv, share):
    """One SMB client's handle reads (its lease held on [leasevol]); a
    second client (another smbd process) opens the file for writing: the
    open answers promptly with STATUS_SUCCESS (the bricks hold it until
    the lease is given back), its write lands, and the first handle's
    next read returns the new bytes."""
    env, mounts = srv
    name = 'leasehead-%d-%s.dat' % (os.getpid(), share)
    path = fresh_file(mounts[share], name, bytes(SIZE))
    new = bytes((i * 5 + 9) % 251 for i in range(4096))
    reader = Client(env, share)
    writer = None
    try:
        status, fid = reader.create(
            name, disposition=s3.FILE_OPEN,
            access=s3.FILE_READ_DATA | s3.FILE_READ_ATTRIBUTES |
            s3.SYNCHRONIZE)
        assert status == OK, status_name(status)
        first = [reader.read(fid, i * 4096, 4096)[0] for i in range(3)]
        writer = Client(env, share)
        assert writer.pid != reader.pid
        t0 = time.monotonic()
        wstatus, wfid = writer.create(
            name, disposition=s3.FILE_OPEN,
            access=s3.FILE_READ_DATA | s3.FILE_WRITE_DATA |
            s3.FILE_READ_ATTRIBUTES | s3.SYNCHRONIZE)
        took = time.monotonic() - t0
        wrote = writer.write(wfid, 0, new) if wstatus == OK else None
        seen = reader.read(fid, 0, 4096)
        if wstatus == OK:
            writer.close(wfid)
        reader.close(fid)
    finally:
        reader.drop()
        if writer is not None:
            writer.drop()
        os.unlink(path)
    assert first == [OK] * 3
    assert wstatus == OK, status_name(wstatus)
    assert took < PROMPT_S, 'the second open took %.1f s' % took
    assert wrote == (OK, len(new))
    assert seen == (OK, new)


class Alarm(Exception):
    pass


def fcntl_lock(fd, cmd, l_type, start, length):
    """fcntl(fd, cmd) with a struct flock of [start, start + length):
    (the l_type it answers, seconds taken); a call that does not return
    within 4 * PROMPT_S raises Alarm."""
    def ring(_sig, _frame):
        raise Alarm()
    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(int(4 * PROMPT_S))
    t0 = time.monotonic()
    try:
        out = fcntl.fcntl(fd, cmd, FLOCK.pack(l_type, os.SEEK_SET, start,
                                              length, 0))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return FLOCK.unpack(out)[0], time.monotonic() - t0


@pytest.mark.parametrize('share', SHARES)
@pytest.mark.parametrize('cmd', ['F_SETLK', 'F_SETLKW', 'F_GETLK'])
def test_fuse_descriptor_opened_before_the_lease(srv, share, cmd):
    """The other client opens the file before the SMB handle reads (and
    takes its lease on [leasevol]), then asks for a lock of [0, 4096) on
    that descriptor: F_SETLK and F_SETLKW are granted promptly and the
    next SMB read of the range fails with FILE_LOCK_CONFLICT; F_GETLK
    answers F_UNLCK promptly and the next SMB read passes; after the
    unlock SMB reads pass again."""
    env, mounts = srv
    name = 'leaseearly-%d-%s-%s.dat' % (os.getpid(), share, cmd)
    path = fresh_file(mounts[share], name, bytes(SIZE))
    early = os.open(path, os.O_RDWR)
    cl = None
    try:
        cl, fid = open_rw(env, share, name)
        before = [cl.read(fid, i * 4096, 4096)[0] for i in range(3)]
        answered, took = fcntl_lock(early, getattr(fcntl, cmd),
                                    fcntl.F_WRLCK, 0, 4096)
        during = cl.read(fid, 0, 4096)[0]
        fcntl_lock(early, fcntl.F_SETLK, fcntl.F_UNLCK, 0, 4096)
        after = cl.read(fid, 0, 4096)[0]
        cl.close(fid)
    finally:
        os.close(early)
        if cl is not None:
            cl.drop()
        os.unlink(path)
    assert before == [OK] * 3
    assert took < PROMPT_S, '%s took %.1f s' % (cmd, took)
    if cmd == 'F_GETLK':
        assert (answered, during) == (fcntl.F_UNLCK, OK), \
            (answered, status_name(during))
    else:
        assert during == CONFLICT, status_name(during)
    assert after == OK, status_name(after)


def kill_and_start_brick(vol, mount):
    """kill -9 of the volume's brick, `volume start force`, then wait
    until the FUSE mount writes again."""
    pids = brick_pids({'GLUSTER_VOLUME': vol})
    assert len(pids) == 1, pids
    pid = list(pids.values())[0]
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while os.path.exists('/proc/%d' % pid):
        assert time.monotonic() < deadline, 'brick %d did not go' % pid
        time.sleep(0.1)
    gluster('volume', 'start', vol, 'force')
    probe = os.path.join(mount, '.lease-probe-%d' % os.getpid())
    deadline = time.monotonic() + 90
    while True:
        try:
            with open(probe, 'wb') as f:
                f.write(b'x')
            os.unlink(probe)
            return
        except OSError:
            assert time.monotonic() < deadline, 'the brick is not back'
            time.sleep(0.5)


def test_brick_restart_drops_the_lease(srv, lease_volume):
    """Reads on a handle (its lease trusted); the brick is killed and
    started again, and every client reconnects; the other client then
    locks a range: the next SMB read of it must fail with
    FILE_LOCK_CONFLICT, as it does without the lease."""
    env, mounts = srv
    vol, mount = lease_volume
    name = 'leasebrick-%d.dat' % os.getpid()
    path = fresh_file(mount, name, bytes(SIZE))
    cl, fid = open_rw(env, 'leasevol', name)
    holder = None
    try:
        before = [cl.read(fid, i * 4096, 4096)[0] for i in range(3)]
        kill_and_start_brick(vol, mount)
        deadline = time.monotonic() + 60
        while cl.read(fid, 8192, 4096)[0] != OK:
            assert time.monotonic() < deadline, 'SMB reads do not resume'
            time.sleep(0.5)
        holder = Holder(path, 0, 4096)
        during = cl.read(fid, 0, 4096)[0]
        holder.release()
        cl.close(fid)
    finally:
        if holder is not None:
            holder.release()
        cl.drop()
        os.unlink(path)
    assert before == [OK] * 3
    assert during == CONFLICT, status_name(during)


def test_lease_option_asks_the_bricks(srv, lease_volume, lease_smbd):
    """32 SMB reads of one handle on [leasevol], a volume that grants
    leases: the bricks see no LEASE fop and one LK fop (F_GETLK) per
    read, as without the option, and the smbd logs that the option
    behaves as getlk."""
    env, mounts = srv
    vol = lease_volume[0]
    name = 'leasecount-%d.dat' % os.getpid()
    path = fresh_file(mounts['leasevol'], name, bytes(SIZE))
    gluster('volume', 'profile', vol, 'start', check=False)
    cl = None
    try:
        profile_fops(vol)
        cl, fid = open_rw(env, 'leasevol', name)
        reads = [cl.read(fid, i * 4096, 4096)[0] for i in range(32)]
        n = profile_fops(vol)
        cl.close(fid)
    finally:
        if cl is not None:
            cl.drop()
        gluster('volume', 'profile', vol, 'stop', check=False)
        os.unlink(path)
    assert reads == [OK] * 32
    assert n.get('LEASE', 0) == 0, n
    assert n.get('LK', 0) >= 32, n
    assert 'lock check = lease now behaves as getlk' in \
        lease_smbd.logs(tail=10 ** 6)
