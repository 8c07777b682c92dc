"""The layers of the module import only downwards (no test stack needed).

    python3 -m pytest test/docs

The layers and their files are listed once, in docs/design.md: a
"### Layer N: name" heading per layer, bottom up, and under it one line
per file ("- `source/NAME.c`: ...").  This reads that list and checks
that every file of source/ and include/ is listed exactly once, that a
file includes the project's headers of its own layer and of the layers
below, never above, that the headers' includes form no cycle, that the
pure core (the first layer) includes no Samba or gfapi header, and that
every file's first comment names its layer ("Layer: name.").

It also reads the calls: a function of source/ that another file of
source/ names is a call from that file to the one that defines it.  No
file calls a file of a layer above its own, and the calls among the
files of source/ form no cycle (within a layer too), so that every
file has a place below its callers.
"""

import glob
import os
import re

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
DESIGN = os.path.join(TOP, 'docs', 'design.md')
HEADING_RE = re.compile(r'^### Layer (\d+): (\S+)[ \t]*$', re.M)
FILE_RE = re.compile(r'^- `((?:source|include)/[\w.+-]+)`', re.M)


def read_layers():
    """[(layer, [path, ...]), ...] bottom up, from docs/design.md."""
    with open(DESIGN) as f:
        text = f.read()
    heads = list(HEADING_RE.finditer(text))
    assert heads, 'docs/design.md has no "### Layer N: name" headings'
    layers = []
    for i, m in enumerate(heads):
        assert int(m.group(1)) == i + 1, \
            'docs/design.md: layer headings out of order at %r' % m.group(0)
        end = heads[i + 1].start() if i + 1 < len(heads) else \
            (re.compile(r'^#{1,3} ', re.M).search(text, m.end()) or
             re.compile(r'\Z').search(text)).start()
        layers.append((m.group(2),
                       FILE_RE.findall(text[m.end():end])))
    return layers


LAYERS = read_layers()
ORDER = [name for name, _ in LAYERS]
LISTED = [p for _, paths in LAYERS for p in paths]
LAYER_OF = {}
for _name, _paths in LAYERS:
    for _p in _paths:
        LAYER_OF[os.path.splitext(os.path.basename(_p))[0]] = _name
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


def test_every_file_is_listed_once():
    present = sorted(os.path.relpath(p, TOP) for p in code_files())
    missing = [p for p in present if p not in LISTED]
    assert not missing, 'files listed under no layer of docs/design.md: ' \
        '%s' % missing
    gone = sorted(set(LISTED) - set(present))
    assert not gone, 'docs/design.md lists files that do not exist: %s' % gone
    twice = sorted(set(p for p in LISTED if LISTED.count(p) > 1))
    assert not twice, 'docs/design.md lists files twice: %s' % twice


def first_comment(path):
    with open(path) as f:
        text = f.read()
    m = re.match(r'\s*/\*(.*?)\*/', text, re.S)
    return m.group(1) if m else ''


def test_first_comment_names_the_layer():
    bad = []
    for path in code_files():
        layer = LAYER_OF.get(stem(path))
        if layer is None:
            continue
        found = re.findall(r'Layer: (\w+)\.', first_comment(path))
        if found != [layer]:
            bad.append('%s: first comment says %s, docs/design.md %s' % (
                os.path.relpath(path, TOP), found or 'no layer', layer))
    assert not bad, '\n'.join(bad)


def test_includes_go_downwards_only():
    bad = []
    for path in code_files():
        mine = ORDER.index(LAYER_OF.get(stem(path), ORDER[-1]))
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


# a function definition: at the start of a line, not static, its body's
# brace at the start of the next line after the parameters
DEF_RE = re.compile(r'^(?!static\b)(?:[A-Za-z_][\w \t*]*?[\s*])?'
                    r'([a-z_]\w*)\(([^;{}]*?)\)[ \t]*\n\{', re.M)
COMMENT_RE = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)
STRING_RE = re.compile(r'"(?:\\.|[^"\\\n])*"')
WORD_RE = re.compile(r'\b[a-z_]\w*\b')


def source_texts():
    """{stem: text of source/STEM.c without comments and strings}"""
    texts = {}
    for path in glob.glob(os.path.join(TOP, 'source', '*.c')):
        with open(path) as f:
            text = f.read()
        texts[stem(path)] = STRING_RE.sub('""', COMMENT_RE.sub(' ', text))
    return texts


def call_graph():
    """{caller stem: {callee stem: sorted function names}}"""
    texts = source_texts()
    defined = {}
    for name, text in texts.items():
        for m in DEF_RE.finditer(text):
            defined.setdefault(m.group(1), name)
    graph = {}
    for name, text in texts.items():
        for word in set(WORD_RE.findall(text)):
            home = defined.get(word)
            if home is not None and home != name:
                graph.setdefault(name, {}).setdefault(home, []).append(word)
    for callees in graph.values():
        for funcs in callees.values():
            funcs.sort()
    return graph


GRAPH = call_graph()


def test_the_call_graph_is_read():
    # the glue reaches the bridge: a reader that finds nothing fails here
    assert 'gf2_async' in GRAPH.get('gf2_read', {}), GRAPH.get('gf2_read')
    assert len(GRAPH) >= 15, sorted(GRAPH)


def test_calls_go_downwards_only():
    bad = []
    for caller, callees in sorted(GRAPH.items()):
        mine = ORDER.index(LAYER_OF.get(caller, ORDER[-1]))
        for callee, funcs in sorted(callees.items()):
            theirs = ORDER.index(LAYER_OF.get(callee, ORDER[-1]))
            if theirs > mine:
                bad.append('source/%s.c (%s) calls source/%s.c (%s): %s' % (
                    caller, ORDER[mine], callee, ORDER[theirs],
                    ' '.join(funcs)))
    assert not bad, '\n'.join(bad)


def call_cycles():
    """Every call cycle among source/ files, each as the files in order."""
    index = {}
    low = {}
    stack = []
    on_stack = set()
    cycles = []

    def connect(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(GRAPH.get(node, {})):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            part = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                cycles.append(sorted(part))

    for node in sorted(set(GRAPH) |
                       set(c for cs in GRAPH.values() for c in cs)):
        if node not in index:
            connect(node)
    return cycles


def test_calls_form_no_cycle():
    bad = []
    for part in call_cycles():
        lines = ['files that call each other in a circle: %s' %
                 ', '.join('source/%s.c' % p for p in part)]
        for caller in part:
            for callee in part:
                funcs = GRAPH.get(caller, {}).get(callee)
                if funcs:
                    lines.append('  source/%s.c -> source/%s.c: %s' % (
                        caller, callee, ' '.join(funcs)))
        bad.append('\n'.join(lines))
    assert not bad, '\n'.join(bad)
