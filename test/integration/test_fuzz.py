"""Bounded libFuzzer runs of the pure parts (bad input).

test/fuzz/run builds the harnesses of test/fuzz/ with clang, ASan and
UBSan and runs each for a bounded time from its seed corpus
(test/fuzz/corpus/NAME/, which replays first the inputs that found bugs):
option parsing (source/gf2_options.c, the volfile check included), the
readahead state machine (source/gf2_readahead.c, driven with reads,
completions, invalidations and time, its invariants asserted) and the
POSIX ACL xattr codec (source/gf2_acl_xattr.c).  Any crash, sanitizer
report or broken invariant fails the test.

A second test checks that the harnesses can fail: each bug the fuzzers
found is put back into a scratch copy of its source file, and the harness
must then fail.

FUZZ_SECONDS (default 20) sets the time per harness.
"""

import os
import re
import subprocess

import pytest

from conftest import TOP

RUN = os.path.join(TOP, 'test', 'fuzz', 'run')
HARNESSES = ('options', 'readahead', 'acl_xattr')
SECONDS = int(os.environ.get('FUZZ_SECONDS', '20'))


def run(args, timeout):
    p = subprocess.run([RUN] + args, cwd=TOP, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True,
                       timeout=timeout)
    return p.returncode, p.stdout


def test_fuzz_bounded():
    rc, out = run(['--seconds', str(SECONDS)],
                  timeout=len(HARNESSES) * (SECONDS + 90))
    assert rc == 0, out[-4000:]
    summary = out.rsplit('=== fuzz summary', 1)[1]
    for h in HARNESSES:
        m = re.search(r'^%s: (\d+) executions .*: ok$' % h, summary, re.M)
        assert m, 'no passing summary line for %s:\n%s' % (h, out[-3000:])
        assert int(m.group(1)) > 1000, summary


# (harness, source file, text of the fix, the buggy text put back)
PLANTED = [
    ('readahead', 'source/gf2_readahead.c',
     '\t\tif (next < s->frontier) {\n\t\t\tnext = s->frontier;\n\t\t}\n',
     ''),
    ('options', 'source/gf2_options.c',
     '\t\tif (!gf2_valid_ipv6_chars(host + 1, hostlen)) {',
     '\t\tif (false && !gf2_valid_ipv6_chars(host + 1, hostlen)) {'),
]


@pytest.mark.parametrize('harness,src,fix,bug', PLANTED,
                         ids=[p[0] for p in PLANTED])
def test_fuzz_finds_planted_bug(tmp_path, harness, src, fix, bug):
    with open(os.path.join(TOP, src)) as f:
        text = f.read()
    assert text.count(fix) == 1, 'the fix is no longer in %s as the test ' \
        'expects: update PLANTED' % src
    scratch = tmp_path / os.path.basename(src)
    scratch.write_text(text.replace(fix, bug))
    rc, out = run(['--seconds', '10', '--harness', harness,
                   '--source', '%s=%s' % (harness, scratch)], timeout=120)
    assert rc != 0, 'the %s harness did not catch the bug put back ' \
        'into %s:\n%s' % (harness, src, out[-3000:])
    assert 'invariant failed' in out, out[-3000:]
