"""The documentation's promises about the tree (no test stack needed).

    python3 -m pytest test/docs

  - docs/design.md's "Layers" section names every file in source/ and
    include/, and names no file there that does not exist (the layers
    themselves: test_layers.py);
  - README stays short (at most 250 lines) and names the two commands an
    admin starts with, `test/demo` and `test/run-all`.
"""

import os
import re

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
DESIGN = os.path.join(TOP, 'docs', 'design.md')
README = os.path.join(TOP, 'README')
CODE_DIRS = ('source', 'include')
README_MAX_LINES = 250

# source/NAME or include/NAME, not preceded by a path character (so that
# test/unit/... or build/source/... are not taken for them).
PATH_RE = re.compile(r'(?<![\w./-])((?:%s)/[\w.+/-]+)' % '|'.join(CODE_DIRS))


def layout_section(text):
    """The text of the '## Layers' section, up to the next '## ' heading."""
    m = re.search(r'^## Layers[ \t]*\n(.*?)(?=^## |\Z)', text, re.M | re.S)
    assert m, 'docs/design.md has no "## Layers" section'
    return m.group(1)


def named_files(section):
    names = set()
    for m in PATH_RE.finditer(section):
        path = m.group(1).rstrip('.,;:')
        if path.rstrip('/') in CODE_DIRS:
            continue
        names.add(path)
    return names


def tree_files():
    files = set()
    for d in CODE_DIRS:
        for root, dirs, names in os.walk(os.path.join(TOP, d)):
            dirs[:] = [x for x in dirs if not x.startswith('.')]
            for n in names:
                if n.startswith('.'):
                    continue
                files.add(os.path.relpath(os.path.join(root, n), TOP))
    return files


def test_layout_names_every_file():
    with open(DESIGN) as f:
        named = named_files(layout_section(f.read()))
    present = tree_files()
    missing = sorted(present - named)
    assert not missing, \
        'docs/design.md Layers does not name: %s' % ', '.join(missing)


def test_layout_names_no_missing_file():
    with open(DESIGN) as f:
        named = named_files(layout_section(f.read()))
    present = tree_files()
    gone = sorted(named - present)
    assert not gone, \
        'docs/design.md Layers names files that do not exist: %s' % \
        ', '.join(gone)


def test_readme_is_short_and_names_the_commands():
    with open(README) as f:
        text = f.read()
    lines = text.count('\n') + (0 if text.endswith('\n') else 1)
    assert lines <= README_MAX_LINES, \
        'README has %d lines (at most %d)' % (lines, README_MAX_LINES)
    for cmd in ('test/demo', 'test/run-all'):
        assert re.search(r'(?<![\w/.-])%s(?![\w/.-])' % re.escape(cmd),
                         text), 'README does not name %s' % cmd
