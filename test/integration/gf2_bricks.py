"""The brick processes of the test stack's volume, and the gluster CLI.

brick_pids(stack) asks the stack's glusterd (`gluster volume status
--xml`), so it names only this stack's bricks: a test platform's stack on
the same machine (test/platform) runs its own glusterd with a volume of
the same name, whose brick processes a match on the command line would
take for these.
"""

import subprocess
import xml.etree.ElementTree as ET


def gluster(*args, check=True):
    """Run the gluster CLI in script mode; with check, a non-zero exit is
    an AssertionError that carries the CLI's output."""
    p = subprocess.run(['gluster', '--mode=script'] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError('gluster %s: %s' % (' '.join(args), p.stdout))
    return p


def brick_pids(stack):
    """{brick path: pid} of the volume's bricks that are online."""
    out = subprocess.run(['gluster', '--mode=script', 'volume', 'status',
                          stack['GLUSTER_VOLUME'], '--xml'],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, check=True,
                         timeout=120).stdout
    pids = {}
    for node in ET.fromstring(out).iter('node'):
        path = node.findtext('path') or ''
        pid = int(node.findtext('pid') or 0)
        if path.startswith('/') and pid > 0 and \
                node.findtext('status') == '1':
            pids[path] = pid
    return pids
