"""Invalid SMB requests that reach the module (bad input).

Every case is sent, as raw SMB2 requests over one impacket session
(test/tools/smb2q.py's Conn), to the stack's `glusterfs2` share and to the
`local` share (Samba's default VFS on a local directory, the reference),
and the NTSTATUS glusterfs2 returns must equal local's.  Where the two
differ for a reason that is not the module's, the case says so in
EXPECTED_DIFFERENCES, and the test then asserts exactly that difference.

Cases:
  - reads and writes at offsets >= 2^63 and near 2^64 (smbd hands the
    module a negative off_t), at 2^63 - 1 where offset + length wraps
    past INT64_MAX;
  - zero-length reads and writes, at 0, at EOF and at huge offsets;
  - reads and writes one byte larger than the negotiated maximum
    (INVALID_PARAMETER from smbd, before the module);
  - reads at EOF, past EOF and across EOF (short read);
  - names: control characters, trailing dots and spaces, unicode (BMP and
    a surrogate pair), a 255-byte name, 256 bytes and 255 characters of
    a two-byte UTF-8 letter (510 bytes), reserved characters;
  - deep paths: 60 levels of directories created one by one, a file at
    the bottom written and read back, and a path past PATH_MAX.

After every case the smbd child serving the connection must still be alive
and answer an ECHO, and at the end the file written at the start must
still hold exactly its data, and no smbd that served us logged a PANIC.
"""

import os
import shutil
import struct
import time
import uuid

import pytest

from conftest import TOP
from gf2_logs import log_offsets, panics_since
from gf2_smb2 import CREATE_REQ, Client, close_packet, create_eof, request, \
    s3, smb2q, smb3, status_name

SHARES = ('glusterfs2', 'local')

DATA_SIZE = 100000      # the file every data case works on
SEED = 'bad-requests'

# Cases whose status on glusterfs2 legitimately differs from local's:
# case name -> (glusterfs2 status, local status, why).  Empty when the
# module matches the default VFS everywhere.
EXPECTED_DIFFERENCES = {
    # gfapi resolves every call's whole path from the volume root and
    # refuses paths past PATH_MAX (4096 bytes) with ENAMETOOLONG, which
    # smbd maps to OBJECT_NAME_INVALID; the default VFS works relative to
    # the parent directory's descriptor (openat), so local creates one
    # more level and then fails resolving the parent (PATH_NOT_FOUND).
    # (The stock vfs_glusterfs refuses the very first 240-byte name, as
    # it refuses every name of 228-255 bytes: see gf2_get_real_filename_at.)
    # Level 16 is the first whose share-relative path passes 4096 bytes.
    'mkdir past PATH_MAX': (((16, 'STATUS_OBJECT_NAME_INVALID'),),
                            ((17, 'STATUS_OBJECT_PATH_NOT_FOUND'),),
                            'gfapi paths are limited to PATH_MAX'),
}


def share_dir(stack, share):
    return stack['LOCAL_DIR'] if share == 'local' else stack['FUSE_MOUNT']


@pytest.fixture(scope='module')
def env(stack):
    """A directory of our own on both shares, a data file of DATA_SIZE
    pattern bytes in each, one client per share."""
    top = 'badreq-%s' % uuid.uuid4().hex[:10]
    pattern = smb2q.Pattern(SEED)
    data = bytes(pattern.get(0, DATA_SIZE))
    offsets = log_offsets(stack)
    clients = {}
    for share in SHARES:
        cl = Client(stack, share)
        clients[share] = cl
        st, fid = cl.create(top, directory=True, disposition=s3.FILE_CREATE)
        assert st == 0, status_name(st)
        cl.close(fid)
        st, fid = cl.create(top + '/data', disposition=s3.FILE_OVERWRITE_IF)
        assert st == 0, status_name(st)
        st, n = cl.write(fid, 0, data)
        assert (st, n) == (0, DATA_SIZE), (status_name(st), n)
        cl.close(fid)
    e = {'top': top, 'data': data, 'clients': clients, 'stack': stack,
         'log_offsets': offsets, 'results': {}}
    yield e
    for share in SHARES:
        clients[share].drop()
        shutil.rmtree(os.path.join(share_dir(stack, share), top),
                      ignore_errors=True)


def compare(env, case, results, expected=None):
    """results: share -> comparable outcome (a status name, or a tuple
    starting with one).  glusterfs2's must equal local's (or the
    documented difference), and local's must be `expected` when given.
    Both smbd children must still serve."""
    env['results'][case] = results
    for cl in env['clients'].values():
        cl.alive()
    g, l = results['glusterfs2'], results['local']
    if expected is not None:
        assert l == expected, '%s: local gave %r, the test expects %r' % (
            case, l, expected)
    if case in EXPECTED_DIFFERENCES:
        eg, el, why = EXPECTED_DIFFERENCES[case]
        assert (g, l) == (eg, el), '%s: documented difference (%s) no ' \
            'longer holds: glusterfs2 %r, local %r' % (case, why, g, l)
        return
    assert g == l, '%s: glusterfs2 gave %r, local %r' % (case, g, l)


def with_data_file(env, fn, access=None):
    """Run fn(client, fid) on each share's data file; share -> result."""
    out = {}
    for share, cl in env['clients'].items():
        st, fid = cl.create(env['top'] + '/data', disposition=s3.FILE_OPEN,
                            access=access)
        assert st == 0, '%s: open data: %s' % (share, status_name(st))
        try:
            out[share] = fn(cl, fid)
        finally:
            cl.close(fid)
    return out


# -- reads and writes at odd offsets and sizes ---------------------------

HUGE_OFFSETS = [
    ('2^63', 1 << 63),
    ('2^63+4096', (1 << 63) + 4096),
    ('2^64-65536', (1 << 64) - 65536),
    ('2^64-1', (1 << 64) - 1),
    ('2^63-1', (1 << 63) - 1),          # offset + length wraps INT64_MAX
]


@pytest.mark.parametrize('label,off', HUGE_OFFSETS,
                         ids=[x[0] for x in HUGE_OFFSETS])
@pytest.mark.parametrize('length', [1, 65536])
def test_read_huge_offset(env, label, off, length):
    def run(cl, fid):
        st, data = cl.read(fid, off, length)
        return (status_name(st), len(data))
    compare(env, 'read %d at %s' % (length, label),
            with_data_file(env, run))


@pytest.mark.parametrize('label,off', HUGE_OFFSETS,
                         ids=[x[0] for x in HUGE_OFFSETS])
@pytest.mark.parametrize('length', [1, 65536])
def test_write_huge_offset(env, label, off, length):
    def run(cl, fid):
        st, n = cl.write(fid, off, b'\xa5' * length)
        return (status_name(st), n)
    compare(env, 'write %d at %s' % (length, label),
            with_data_file(env, run))


@pytest.mark.parametrize('off', [0, 4096, DATA_SIZE, DATA_SIZE + 1,
                                 1 << 40, 1 << 63, (1 << 64) - 1])
def test_zero_length_read(env, off):
    def run(cl, fid):
        st, data = cl.read(fid, off, 0)
        return (status_name(st), len(data))
    compare(env, 'read 0 at %d' % off, with_data_file(env, run))


@pytest.mark.parametrize('off', [0, 4096, DATA_SIZE, DATA_SIZE + 1,
                                 1 << 40, 1 << 63, (1 << 64) - 1])
def test_zero_length_write(env, off):
    def run(cl, fid):
        st, n = cl.write(fid, off, b'')
        return (status_name(st), n)
    compare(env, 'write 0 at %d' % off, with_data_file(env, run))


def test_read_larger_than_max(env):
    """One byte past the negotiated max read: INVALID_PARAMETER."""
    def run(cl, fid):
        st, data = cl.read(fid, 0, cl.max_read + 1)
        return (status_name(st), len(data))
    compare(env, 'read max+1', with_data_file(env, run),
            expected=('STATUS_INVALID_PARAMETER', 0))


def test_read_exactly_max(env):
    """The negotiated max read itself is fine: the whole (short) file."""
    def run(cl, fid):
        st, data = cl.read(fid, 0, cl.max_read)
        return (status_name(st), len(data), data == env['data'])
    compare(env, 'read max', with_data_file(env, run),
            expected=('STATUS_SUCCESS', DATA_SIZE, True))


def test_write_larger_than_max(env):
    def run(cl, fid):
        st, n = cl.write(fid, 0, b'\x5a' * (cl.max_write + 1))
        return (status_name(st), n)
    compare(env, 'write max+1', with_data_file(env, run),
            expected=('STATUS_INVALID_PARAMETER', 0))


def test_read_credit_charge_too_small(env):
    """A 1 MiB read that pays one credit: smbd refuses it before the
    module sees it; same answer on both."""
    def run(cl, fid):
        st, data = cl.read(fid, 0, 1 << 20, charge=1)
        return (status_name(st), len(data))
    compare(env, 'read 1M charge 1', with_data_file(env, run),
            expected=('STATUS_INVALID_PARAMETER', 0))


@pytest.mark.parametrize('off,length,want', [
    (DATA_SIZE, 1, 0),                  # at EOF
    (DATA_SIZE, 65536, 0),
    (DATA_SIZE + 1, 1, 0),              # past EOF
    (1 << 40, 65536, 0),                # far past EOF
    ((1 << 62), 4096, 0),
    (DATA_SIZE - 10, 65536, 10),        # across EOF: short read
    (0, DATA_SIZE + 65536, DATA_SIZE),
])
def test_read_at_eof(env, off, length, want):
    def run(cl, fid):
        st, data = cl.read(fid, off, length)
        ok = data == env['data'][off:off + len(data)]
        return (status_name(st), len(data), ok)
    expected = ('STATUS_END_OF_FILE', 0, True) if want == 0 else \
        ('STATUS_SUCCESS', want, True)
    compare(env, 'read %d at %d' % (length, off), with_data_file(env, run),
            expected=expected)


def test_read_without_read_access(env):
    def run(cl, fid):
        st, data = cl.read(fid, 0, 100)
        return (status_name(st), len(data))
    compare(env, 'read on a write-only handle',
            with_data_file(env, run, access=s3.FILE_WRITE_DATA |
                           s3.SYNCHRONIZE),
            expected=('STATUS_ACCESS_DENIED', 0))



@pytest.mark.parametrize('label,access', [
    ('add-file', s3.FILE_LIST_DIRECTORY | s3.FILE_ADD_FILE |
     s3.FILE_READ_ATTRIBUTES | s3.SYNCHRONIZE),
    ('add-subdirectory', s3.FILE_LIST_DIRECTORY |
     s3.FILE_ADD_SUBDIRECTORY | s3.FILE_READ_ATTRIBUTES | s3.SYNCHRONIZE),
    ('list-only', s3.FILE_LIST_DIRECTORY | s3.FILE_READ_ATTRIBUTES |
     s3.SYNCHRONIZE),
], ids=['add-file', 'add-subdirectory', 'list-only'])
def test_flush_directory(env, label, access):
    """FLUSH of a directory handle: a directory opened to add entries
    may be flushed (local answers OK), one opened to list only may not
    (ACCESS_DENIED)."""
    out = {}
    for share, cl in env['clients'].items():
        st, fid = cl.create(env['top'], directory=True,
                            disposition=s3.FILE_OPEN)
        assert st == 0, '%s: open directory: %s' % (share, status_name(st))
        cl.close(fid)
        cl.conn.quiet()
        try:
            fid = cl.conn.c.create(
                cl.conn.tid, env['top'], access,
                s3.FILE_SHARE_READ | s3.FILE_SHARE_WRITE |
                s3.FILE_SHARE_DELETE, s3.FILE_DIRECTORY_FILE, s3.FILE_OPEN,
                s3.FILE_ATTRIBUTE_DIRECTORY)
        except smb3.SessionError as e:
            raise AssertionError('%s: open directory: %s' % (
                share, status_name(e.get_error_code())))
        try:
            st, _ = cl.request(smb2q.RawPacket(
                s3.SMB2_FLUSH, cl.conn.tid,
                struct.pack('<HHI16s', 24, 0, 0, fid)))
            out[share] = status_name(st)
        finally:
            cl.close(fid)
    compare(env, 'flush of a directory (%s)' % label, out,
            expected='STATUS_ACCESS_DENIED' if label == 'list-only' else
            'STATUS_SUCCESS')


class _RawContext:
    def __init__(self, data):
        self.data = data

    def getData(self):
        return self.data


def alloc_context(size):
    """An SMB2_CREATE_ALLOCATION_SIZE ("AlSi") create context."""
    return _RawContext(struct.pack('<IHHHHI', 0, 16, 4, 0, 24, 8) +
                       b'AlSi' + b'\0' * 4 + struct.pack('<Q', size))


def standard_info(cl, fid):
    """(AllocationSize, EndOfFile) of FileStandardInformation."""
    cl.conn.quiet()
    blob = cl.conn.c.queryInfo(cl.conn.tid, fid, inputBlob=b'',
                               infoType=s3.SMB2_0_INFO_FILE,
                               fileInfoClass=5)
    return struct.unpack_from('<QQ', blob, 0)


def test_allocation_size_steps(env):
    """What a copy engine does: create with an AllocationSize create
    context of 1 MiB, set FileAllocationInformation to 1 MiB, write
    3000 bytes; AllocationSize and EndOfFile after each step match
    local's."""
    mib = 1024 * 1024
    out = {}
    for share, cl in env['clients'].items():
        name = '%s/alloc-%s' % (env['top'], uuid.uuid4().hex[:8])
        cl.conn.quiet()
        fid = cl.conn.c.create(
            cl.conn.tid, name.replace('/', '\\'),
            s3.FILE_READ_DATA | s3.FILE_WRITE_DATA |
            s3.FILE_READ_ATTRIBUTES | s3.FILE_WRITE_ATTRIBUTES |
            s3.SYNCHRONIZE | s3.DELETE,
            s3.FILE_SHARE_READ | s3.FILE_SHARE_WRITE | s3.FILE_SHARE_DELETE,
            s3.FILE_NON_DIRECTORY_FILE, s3.FILE_CREATE,
            s3.FILE_ATTRIBUTE_NORMAL, createContexts=[alloc_context(mib)])
        try:
            steps = [('create', standard_info(cl, fid))]
            cl.conn.c.setInfo(cl.conn.tid, fid, struct.pack('<Q', mib),
                              infoType=s3.SMB2_0_INFO_FILE,
                              fileInfoClass=19)
            steps.append(('set allocation', standard_info(cl, fid)))
            st, n = cl.write(fid, 0, b'a' * 3000)
            assert (st, n) == (0, 3000), (share, status_name(st), n)
            steps.append(('write 3000', standard_info(cl, fid)))
        finally:
            cl.close(fid)
        out[share] = tuple(steps)
    compare(env, 'allocation size: create context, set, write', out,
            expected=(('create', (mib, 0)), ('set allocation', (mib, 0)),
                      ('write 3000', (mib, 3000))))

def test_directory_sizes(env):
    """A new directory's EndOfFile and AllocationSize as local reports
    them (0: smbd's own stat calls report every directory with size 0)
    in the CREATE response, FileStandardInformation and
    FileNetworkOpenInformation; gentest's CREATE of a directory showed
    0x1000 where local gave 0."""
    out = {}
    for share, cl in env['clients'].items():
        name = ('%s\\dirsize-%s' % (env['top'], uuid.uuid4().hex[:8])
                ).encode('utf-16-le')
        cl.conn.quiet()
        status, frame = request(cl.conn, smb2q.RawPacket(
            s3.SMB2_CREATE, cl.conn.tid, CREATE_REQ.pack(
                57, 0, 0, 2, 0, 0, s3.FILE_READ_ATTRIBUTES | s3.SYNCHRONIZE,
                s3.FILE_ATTRIBUTE_DIRECTORY,
                s3.FILE_SHARE_READ | s3.FILE_SHARE_WRITE |
                s3.FILE_SHARE_DELETE, s3.FILE_CREATE,
                s3.FILE_DIRECTORY_FILE, 64 + 56, len(name), 0, 0) + name))
        assert status == smb2q.STATUS_SUCCESS, (share,
                                                smb2q.status_str(status))
        created = struct.unpack_from('<QQ', frame, 64 + 40)
        request(cl.conn, close_packet(cl.conn, bytes(frame[64 + 64:64 + 80])))
        st, fid = cl.create(name.decode('utf-16-le').replace('\\', '/'),
                            directory=True, disposition=s3.FILE_OPEN)
        assert st == 0, (share, status_name(st))
        try:
            standard = standard_info(cl, fid)
            blob = cl.conn.c.queryInfo(cl.conn.tid, fid, inputBlob=b'',
                                       infoType=s3.SMB2_0_INFO_FILE,
                                       fileInfoClass=34)
            network = struct.unpack_from('<QQ', blob, 32)
        finally:
            cl.close(fid)
        out[share] = (('create', created), ('standard', standard),
                      ('network open', network))
    compare(env, 'directory sizes', out)


@pytest.mark.xfail(strict=True, reason='the stat md-cache keeps in each '
                   'smbd process\'s Gluster client for its timeout (1 s '
                   'without upcalls), as through the stock module; '
                   'vfs_glusterfs2(8), metadata')
def test_size_written_by_another_connection(env):
    """A file written through one connection (one smbd process) and opened
    right after through another: local gives the size just written in the
    CREATE's EndOfFile.  Each smbd process has a Gluster client of its
    own, whose md-cache keeps the file's stat from the second connection's
    earlier look at it for md-cache's timeout (1 s on a volume that does
    not announce changes), so glusterfs2 gives the old size within that
    second (gentest seed 4640, op 763: 0 where local gave 0x99e7a).  With
    md-cache's timeout 0 in the module's client this passes, at 2-7x the
    time for small files (docs/results.md); a strict xfail until a
    cheaper way is found."""
    end = 0x99e7a
    out = {}
    for share, cl in env['clients'].items():
        other = Client(env['stack'], share)
        try:
            path = '%s\\eof-%s' % (env['top'], uuid.uuid4().hex[:8])
            st, fid = cl.create(path, disposition=s3.FILE_CREATE)
            assert st == 0, (share, status_name(st))
            before = create_eof(other.conn, other.conn.tid, path)
            st, n = cl.write(fid, end - 4096, b'w' * 4096)
            assert (st, n) == (0, 4096), (share, status_name(st), n)
            after = create_eof(other.conn, other.conn.tid, path)
            cl.close(fid)
        finally:
            other.drop()
        out[share] = (('before', before), ('after', after))
    compare(env, 'size written by another connection', out,
            expected=(('before', 0), ('after', end)))


# -- names ----------------------------------------------------------------

NAMES = [
    ('ctrl-01', 'a\x01b'),
    ('ctrl-1f', 'a\x1fb'),
    ('ctrl-tab', 'a\tb'),
    ('ctrl-newline', 'a\nb'),
    ('trailing-dot', 'name.'),
    ('trailing-dots', 'name...'),
    ('trailing-space', 'name '),
    ('leading-space', ' name'),
    ('only-dots', '...'),
    ('unicode-bmp', 'gr\u00fc\u00dfe-\u65e5\u672c\u8a9e-\u0436'),
    ('unicode-astral', 'emoji-\U0001f600-\U0001d11e'),
    ('unicode-combining', 'e\u0301e\u0301'),
    ('bom', '\ufeffbom'),
    ('255-bytes', 'n' * 255),
    ('256-bytes', 'n' * 256),
    ('254-bytes+2byte-char', 'n' * 253 + '\u00e9'),   # 255 bytes in UTF-8
    ('255-bytes-utf8-256', 'n' * 254 + '\u00e9'),      # 256 bytes
    ('255-chars-510-bytes', '\u00e9' * 255),
    ('1000-chars', 'x' * 1000),
    ('star', 'a*b'),
    ('question', 'a?b'),
    ('lt-gt', 'a<b>'),
    ('pipe', 'a|b'),
    ('quote', 'a"b'),
    ('colon-stream', 'a:b'),
    ('colon-bad-stream-type', 'a:b:$BAD'),
    ('dot', '.'),
    ('dotdot-escape', '..\\..\\etc'),
    ('empty-component', 'a\\\\b'),
]


@pytest.mark.parametrize('label,name', NAMES, ids=[x[0] for x in NAMES])
def test_odd_names(env, label, name):
    """Create the name as a file, write 5 bytes, read them back, close;
    then the same for a directory of that name plus '-d'.  Status of each
    step compared."""
    results = {}
    for share, cl in env['clients'].items():
        path = env['top'] + '/' + name
        st, fid = cl.create(path, disposition=s3.FILE_CREATE)
        steps = [status_name(st)]
        if st == 0:
            wst, n = cl.write(fid, 0, b'hello')
            rst, data = cl.read(fid, 0, 100)
            steps += [status_name(wst), n, status_name(rst), data]
            cl.close(fid)
            # open it again by name: the name round-trips
            st2, fid2 = cl.create(path, disposition=s3.FILE_OPEN)
            steps.append(status_name(st2))
            if st2 == 0:
                cl.close(fid2)
        dst, dfid = cl.create(path + '-d', directory=True,
                              disposition=s3.FILE_CREATE)
        steps.append(status_name(dst))
        if dst == 0:
            cl.close(dfid)
        results[share] = tuple(steps)
    compare(env, 'name %s' % label, results)


# -- deep paths -----------------------------------------------------------

def test_deep_path_60_levels(env):
    """60 nested directories created one by one, a file at the bottom
    written and read back through the full path."""
    results = {}
    payload = bytes(smb2q.Pattern('deep').get(0, 70000))
    for share, cl in env['clients'].items():
        path = env['top'] + '/deep'
        st, fid = cl.create(path, directory=True, disposition=s3.FILE_CREATE)
        assert st == 0, status_name(st)
        cl.close(fid)
        steps = []
        for i in range(60):
            path += '/level%02d' % i
            st, fid = cl.create(path, directory=True,
                                disposition=s3.FILE_CREATE)
            steps.append(status_name(st))
            if st != 0:
                break
            cl.close(fid)
        st, fid = cl.create(path + '/bottom.bin',
                            disposition=s3.FILE_CREATE)
        steps.append(status_name(st))
        if st == 0:
            wst, n = cl.write(fid, 0, payload)
            rst, data = cl.read(fid, 0, len(payload) + 10)
            steps += [status_name(wst), n, status_name(rst),
                      data == payload]
            cl.close(fid)
        results[share] = tuple(steps)
    compare(env, 'deep path', results,
            expected=tuple(['STATUS_SUCCESS'] * 62 +
                           [len(payload),
                            'STATUS_SUCCESS', True]))


@pytest.mark.parametrize('label,comp,levels', [
    ('4100 bytes, 17 x 240', 'L' * 240, 17),       # past PATH_MAX (4096)
    ('32000 chars', 'M' * 250, 128),               # near SMB2's 32767 limit
    ('5000 levels of 1', 'q', 2500),
])
def test_path_past_max_length(env, label, comp, levels):
    """A file create through a path longer than PATH_MAX whose directories
    do not exist, and then mkdir of each level in turn until one fails:
    the statuses and the level where it stops are compared."""
    results = {}
    for share, cl in env['clients'].items():
        rel = '/'.join([comp] * levels)
        st, fid = cl.create(env['top'] + '/long/' + rel + '/f',
                            disposition=s3.FILE_CREATE)
        if fid is not None:
            cl.close(fid)
        steps = [status_name(st)]
        results[share] = tuple(steps)
    compare(env, 'long path %s' % label, results)


def test_path_past_max_length_mkdir(env):
    """Directories of 240-byte names created one level at a time until
    the path (share-relative) passes 4096 bytes: where creation stops and
    with what status must match local."""
    results = {}
    comp = 'P' * 240
    for share, cl in env['clients'].items():
        path = env['top'] + '/mk'
        st, fid = cl.create(path, directory=True, disposition=s3.FILE_CREATE)
        assert st == 0
        cl.close(fid)
        steps = []
        for i in range(24):
            path += '/' + comp
            st, fid = cl.create(path, directory=True,
                                disposition=s3.FILE_CREATE)
            if fid is not None:
                cl.close(fid)
            if st != 0:
                steps.append((i, status_name(st)))
                break
        else:
            steps.append((24, 'all created'))
        results[share] = tuple(steps)
    if results['local'] == ((0, 'STATUS_OBJECT_NAME_INVALID'),):
        # Samba 4.22 and later create a directory under a temporary name
        # ~40 bytes longer (vfs mkdir use tmp name): no share gets past
        # the first 240-byte name (docs/samba-versions.md)
        assert results['glusterfs2'] == results['local'], results
        return
    compare(env, 'mkdir past PATH_MAX', results)


# -- nothing lost, nothing crashed ---------------------------------------

def write_table(results):
    """test/results/bad-requests.md: every case and what each share
    answered (outcome tuples shortened: statuses without STATUS_)."""
    def short(v):
        if isinstance(v, tuple):
            return ', '.join(short(x) for x in v)
        if isinstance(v, bytes):
            return repr(v)
        return str(v).replace('STATUS_', '')
    lines = ['# Invalid SMB requests: glusterfs2 against local',
             '',
             'Written by test/integration/test_bad_requests.py.  Each row: '
             'the outcome steps of one case (statuses, byte counts, data '
             'checks).', '',
             '| case | glusterfs2 | local | same |',
             '| --- | --- | --- | --- |']
    for case, r in results.items():
        g, l = short(r['glusterfs2']), short(r['local'])
        if len(g) > 120:
            g = g[:117] + '...'
        if len(l) > 120:
            l = l[:117] + '...'
        same = 'yes' if r['glusterfs2'] == r['local'] else \
            'no (documented)'
        lines.append('| %s | %s | %s | %s |' % (
            case.replace('|', '\\|'), g.replace('|', '\\|'),
            l.replace('|', '\\|'), same))
    os.makedirs(os.path.join(TOP, 'test', 'results'), exist_ok=True)
    with open(os.path.join(TOP, 'test', 'results', 'bad-requests.md'),
              'w') as f:
        f.write('\n'.join(lines) + '\n')


def test_zz_data_intact_and_no_crash(env):
    """Last: the data file holds exactly what was written at the start
    on both shares (every failed write above wrote nothing), both smbd
    children still serve, and none of them logged a PANIC."""
    def run(cl, fid):
        st, data = cl.read(fid, 0, DATA_SIZE + 4096)
        return (status_name(st), len(data), data == env['data'])
    write_table(env['results'])
    out = with_data_file(env, run)
    for share, r in out.items():
        assert r == ('STATUS_SUCCESS', DATA_SIZE, True), (share, r)
    pids = {cl.pid for cl in env['clients'].values() if cl.pid}
    assert pids, 'no smbd child pid found for the connections'
    for cl in env['clients'].values():
        cl.alive()
    time.sleep(0.5)
    panics = panics_since(env['stack'], env['log_offsets'], pids)
    assert not panics, 'smbd crashed:\n' + '\n'.join(panics)
