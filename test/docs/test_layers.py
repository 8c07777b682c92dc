"""The layers of the module import only downwards (no test stack needed).

    python3 -m pytest test/docs

Every file of source/ and include/ belongs to one layer, bottom up: the
pure core (no Samba, no gfapi), the bridge (gfapi and tevent), the caches
and the VFS glue.  A file may include the project's headers of its own
layer and of the layers below, never above; the headers' includes form
no cycle; the pure core includes no Samba or gfapi header at all.
"""

import glob
import os
import re

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))

LAYERS = {
    'core': ['gf2_options', 'gf2_readahead', 'gf2_pfbook', 'gf2_wqueue',
             'gf2_mdcache',
             'gf2_acl_xattr', 'gf2_hold', 'gf2_readplan'],
    'bridge': ['gf2_compat', 'gf2_bridge', 'gf2_stats', 'gf2_volume',
               'gf2_transport', 'gf2_async', 'gf2_upcall'],
    'caches': ['gf2_prefetch', 'gf2_meta', 'gf2_cache', 'gf2_wcache'],
    'engines': ['gf2_read'],
    'glue': ['gf2_vfs', 'gf2_config', 'gf2_handles',
             'gf2_dir', 'gf2_metaops', 'gf2_dataops', 'gf2_acl',
             'gf2_offload', 'vfs_glusterfs2'],
}
ORDER = ['core', 'bridge', 'caches', 'engines', 'glue']
LAYER_OF = {name: layer for layer, names in LAYERS.items()
            for name in names}
INCLUDE_RE = re.compile(r'^#include\s+"([^"]+)"', re.M)
# what the pure core may not include
FOREIGN = ('includes.h', 'smbd/', 'glusterfs/', 'tevent', 'lib/util/')


def code_files():
    return sorted(glob.glob(os.path.join(TOP, 'source', '*.c')) +
                  glob.glob(os.path.join(TOP, 'include', '*.h')))


def stem(path):
    return os.path.splitext(os.path.basename(path))[0]


def includes(path):
    with open(path) as f:
        text = f.read()
    return INCLUDE_RE.findall(text)


def test_every_file_has_a_layer():
    missing = [os.path.relpath(p, TOP) for p in code_files()
               if stem(p) not in LAYER_OF]
    assert not missing, 'files in no layer (add them to LAYERS and to ' \
        'docs/hacking.md): %s' % missing


def test_includes_go_downwards_only():
    bad = []
    for path in code_files():
        mine = ORDER.index(LAYER_OF.get(stem(path), 'glue'))
        for inc in includes(path):
            name = stem(inc)
            if name not in LAYER_OF:
                if mine == 0 and inc.startswith(FOREIGN):
                    bad.append('%s includes %s (the pure core takes no '
                               'Samba or gfapi header)' %
                               (os.path.relpath(path, TOP), inc))
                continue
            if ORDER.index(LAYER_OF[name]) > mine:
                bad.append('%s (%s) includes %s (%s)' % (
                    os.path.relpath(path, TOP), ORDER[mine], inc,
                    LAYER_OF[name]))
    assert not bad, '\n'.join(bad)


def test_headers_form_no_cycle():
    graph = {}
    for path in glob.glob(os.path.join(TOP, 'include', '*.h')):
        graph[stem(path)] = [stem(i) for i in includes(path)
                             if stem(i) in LAYER_OF]
    state = {}

    def visit(node, trail):
        if state.get(node) == 'done':
            return
        assert state.get(node) != 'open', \
            'include cycle: %s' % ' -> '.join(trail + [node])
        state[node] = 'open'
        for nxt in graph.get(node, []):
            visit(nxt, trail + [node])
        state[node] = 'done'

    for node in graph:
        visit(node, [])
