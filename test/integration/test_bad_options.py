"""Every glusterfs2: option with bad values, through a real smbd.

A private smbd serves one share per (option, bad value): empty,
non-numeric, negative, zero, huge, unknown suffix or mode.  Each tree
connect either works with the documented safe default or is refused (for
the volume and its servers), the smbd log names the share, the option and
what was done about it ("using DEFAULT", DEFAULT being the default the
manual page gives, or "refusing the tree connect"), a refused tree
connect fails with EINVAL (smbd's NT_STATUS_INVALID_PARAMETER for a
module's failed connect, not some other error), and no smbd process
crashes.  The parsers themselves are unit-tested in
test/unit/test_options.c; this checks what an admin sees.
"""

import glob
import os
import re
import subprocess
import sys

from conftest import TOP
from gf2_private_smbd import PrivateSmbd, private_port

NUMERIC_BAD = ['', 'abc', '-5', '0', '99999999999999999999999', '12Q']

# option -> (bad values, expected outcome)
CASES = [
    ('prefetch initial window', NUMERIC_BAD, 'default'),
    ('prefetch max window', NUMERIC_BAD, 'default'),
    ('prefetch direct read size', ['', 'abc', '-5', '99999999999999999999999',
                                   '12Q', '257M'], 'default'),
    ('prefetch max memory', NUMERIC_BAD, 'default'),
    ('prefetch max age', NUMERIC_BAD, 'default'),
    ('prefetch streams', NUMERIC_BAD + ['9'], 'default'),
    ('posix lock cache', ['', 'abc', '-5', '99999999999999999999999', '12Q',
                          '60001'], 'default'),
    ('loglevel', NUMERIC_BAD[:3] + ['10', '99999999999999999999999'],
     'default'),
    ('prefetch', ['', 'maybe', '2', '-1'], 'default'),
    ('client io-threads', ['', 'perhaps'], 'default'),
    ('event threads', ['', 'abc', '-5', '33', '99999999999999999999999',
                       '12Q'], 'default'),
    ('write cache', ['', 'perhaps', '2'], 'default'),
    ('prefetch coherence', ['', 'sometimes', 'STRICTER'], 'default'),
    ('lock check', ['', 'sometimes', 'leases'], 'default'),
    ('volume', ['', 'bad/name', 'x' * 300, 'a b'], 'refuse'),
    ('volfile_server', ['', 'foo+vm', 'vm:99999', 'vm:abc', '[::1'],
     'refuse'),
]

SUFFIX = {'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}


def manual_defaults():
    """{option: default} from the manual page (docs/vfs_glusterfs2.8):
    the "Default:" line after each "glusterfs2:OPTION = ..." line, sizes
    in bytes, as the log's "using ..." writes them."""
    out = {}
    opt = None
    with open(os.path.join(TOP, 'docs', 'vfs_glusterfs2.8')) as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines):
        m = re.match(r'^glusterfs2:(.+?) = ', line)
        if m:
            opt = m.group(1).replace('\\-', '-')
        elif line.startswith('Default:') and opt and i + 1 < len(lines):
            v = re.sub(r'\\f[IRB]', '', lines[i + 1]).strip()
            m = re.match(r'^(\d+)([KMGT])$', v)
            out[opt] = str(int(m.group(1)) * SUFFIX[m.group(2)]) if m else v
            opt = None
    return out


CONNECT = r'''
import smbc, sys
port, user, pw = sys.argv[1], sys.argv[2], sys.argv[3]
ctx = smbc.Context(auth_fn=lambda *a: ('WORKGROUP', user, pw))
for share in sys.argv[4:]:
    try:
        ctx.opendir('smb://127.0.0.1:%s/%s/' % (port, share)).getdents()
        print(share, 'OK')
    except Exception as e:
        print(share, 'ERR', type(e).__name__, e.args[0] if e.args else '')
    sys.stdout.flush()
'''


def test_every_option_bad_values(stack):
    srv = PrivateSmbd('badoptions', stack,
                      port=private_port(stack, 'badoptions',
                                        'GF2_BADOPT_PORT'))
    base = [('vfs objects', 'glusterfs2'), ('path', '/'),
            ('glusterfs2:volume', stack['GLUSTER_VOLUME']),
            ('glusterfs2:volfile_server', stack.get('GLUSTER_HOST',
                                                    'localhost')),
            ('glusterfs2:logfile', os.path.join(srv.dir,
                                                'glusterfs2-%M.log')),
            ('kernel share modes', 'no')]
    shares = []
    expect = {}
    n = 0
    for opt, values, outcome in CASES:
        for v in values:
            n += 1
            name = 'bo%02d' % n
            items = [(k, val) for k, val in base
                     if k != 'glusterfs2:' + opt]
            items.append(('glusterfs2:' + opt, v))
            shares.append((name, items))
            expect[name] = (opt, v, outcome)
    srv.write_conf([], shares)
    for f in glob.glob(os.path.join(srv.dir, 'log.*')):
        os.unlink(f)
    srv.start()
    try:
        p = subprocess.run(
            ['/usr/bin/python3', '-c', CONNECT, str(srv.port),
             stack['SMB_USER'], stack['SMB_PASS']] + [s for s, _ in shares],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            universal_newlines=True, timeout=600)
        results = {}
        for line in p.stdout.splitlines():
            parts = line.split(' ', 1)
            if len(parts) == 2 and parts[0] in expect:
                results[parts[0]] = parts[1]
        log = srv.logs(tail=10 ** 7)
    finally:
        srv.stop()

    defaults = manual_defaults()
    problems = []
    for name, (opt, v, outcome) in expect.items():
        got = results.get(name)
        # smbc raises ValueError(EINVAL) for a refused tree connect
        want = 'OK' if outcome == 'default' else 'ERR ValueError 22'
        if got != want:
            problems.append('%s (glusterfs2:%s = %r): tree connect %s, '
                            'expected %s' % (name, opt, v, got, want))
        # the log line names the share and the option, and what was done:
        # the manual page's default used, or the tree connect refused
        if outcome == 'default':
            assert opt in defaults, 'no default for %s in the manual' % opt
            what = r"= '%s': [^\n]*; using %s\n" % (re.escape(v),
                                                   re.escape(defaults[opt]))
            said = 'using %s' % defaults[opt]
        else:
            what = r"[^\n]*; refusing the tree connect\n"
            said = 'refusing the tree connect'
        pat = r'share \[%s\]: glusterfs2:%s\b ?%s' % (
            re.escape(name), re.escape(opt), what)
        if not re.search(pat, log):
            problems.append('%s (glusterfs2:%s = %r): no log line like '
                            '"share [%s]: glusterfs2:%s ...; %s"'
                            % (name, opt, v, name, opt, said))
    assert 'PANIC' not in log and 'INTERNAL ERROR' not in log, \
        'an smbd crashed:\n' + log[-5000:]
    assert not problems, '\n'.join(problems) + '\n\nclient:\n' + p.stdout
    assert not srv.our_processes(), 'the private smbd did not stop'
