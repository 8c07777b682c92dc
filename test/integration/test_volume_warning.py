"""At connect, glusterfs2 warns when the volume lacks Gluster's "samba"
option group (md-cache cache-invalidation, nl-cache), naming the command
that fixes it; and says nothing when the group is applied.

Both branches run whatever the stack's volume carries: once with the
group's options that the module looks at reset, once with them set
(GROUP_OPTIONS, reset afterwards); each connect is a new smbd process
with its own volume instance, which reads the volfile Gluster hands out
at that moment."""

import subprocess
import time

import pytest

from gf2_logs import logs, new_text

# What of the "samba" group the module reads from the client volfile:
# md-cache's cache-invalidation (with the server's announcements it
# relies on) and the nl-cache translator.
GROUP_OPTIONS = [('features.cache-invalidation', 'on'),
                 ('performance.cache-invalidation', 'on'),
                 ('performance.nl-cache', 'on')]


def gluster(*args):
    p = subprocess.run(['gluster', '--mode=script'] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=120)
    assert p.returncode == 0, (args, p.stdout)


@pytest.fixture(params=['without-group', 'with-group'])
def group(stack, request):
    vol = stack['GLUSTER_VOLUME']
    want = request.param == 'with-group'
    for k, v in GROUP_OPTIONS:
        if want:
            gluster('volume', 'set', vol, k, v)
        else:
            gluster('volume', 'reset', vol, k)
    try:
        yield want
    finally:
        for k, _ in GROUP_OPTIONS:
            gluster('volume', 'reset', vol, k)


def volume_option(stack, name):
    p = subprocess.run(['gluster', 'volume', 'get', stack['GLUSTER_VOLUME'],
                        name], stdout=subprocess.PIPE,
                       universal_newlines=True, check=True)
    for line in p.stdout.splitlines():
        parts = line.split()
        if parts and parts[0] == name:
            return parts[1]
    raise AssertionError('%s not in: %s' % (name, p.stdout))


def test_connect_warns_without_samba_group(stack, group):
    has_group = (volume_option(stack, 'performance.nl-cache') == 'on' and
                 volume_option(stack, 'performance.cache-invalidation')
                 == 'on')
    assert has_group == group
    before = logs(stack)
    p = subprocess.run(
        ['smbclient', '//%s/glusterfs2' % stack['SMB_HOST'],
         '-p', stack['SMB_PORT'],
         '-U', '%s%%%s' % (stack['SMB_USER'], stack['SMB_PASS']),
         '-c', 'ls'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        universal_newlines=True, timeout=120)
    assert p.returncode == 0, p.stdout
    time.sleep(1)
    text = new_text(stack, before)
    vol = stack['GLUSTER_VOLUME']
    warned = ("volume %s lacks Gluster's 'samba' option group" % vol in
              text)
    if has_group:
        assert not warned, text[-3000:]
    else:
        assert warned, 'no warning in the smbd log:\n' + text[-3000:]
        assert 'gluster volume set %s group samba' % vol in text
