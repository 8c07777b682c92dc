"""The tests' own tree (no test stack needed).

    python3 -m pytest test/docs/test_test_files.py

  - no test module (test_*.py anywhere under test/) imports another one:
    what tests share (clients, fixtures, helpers) lives in helper modules
    beside them (gf2_*.py, conftest.py), so that running, moving or
    removing one test file never changes another.
"""

import ast
import os

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
TEST_DIR = os.path.join(TOP, 'test')


def find_test_modules():
    """{path relative to TOP: module name} of every test_*.py under test/."""
    out = {}
    for root, dirs, names in os.walk(TEST_DIR):
        dirs[:] = sorted(d for d in dirs
                         if not d.startswith('.') and d != '__pycache__')
        for n in sorted(names):
            if n.startswith('test_') and n.endswith('.py'):
                out[os.path.relpath(os.path.join(root, n), TOP)] = n[:-3]
    return out


def imported_names(source):
    """The modules source imports: import statements (every dotted part),
    and the string given to importlib's import_module or
    spec_from_file_location (its file name without .py)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for a in node.names:
                names.update(a.name.split('.'))
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.update(node.module.split('.'))
        elif isinstance(node, ast.Call):
            f = node.func
            fname = f.attr if isinstance(f, ast.Attribute) else \
                getattr(f, 'id', '')
            if fname in ('import_module', 'spec_from_file_location',
                         '__import__'):
                for arg in ast.walk(node):
                    if isinstance(arg, ast.Constant) and \
                            isinstance(arg.value, str):
                        base = os.path.basename(arg.value)
                        names.add(base[:-3] if base.endswith('.py')
                                  else base)
    return names


def test_finds_imports_of_test_modules():
    src = ('import os\nimport test_a\nfrom test_b import x\n'
           'from pkg.test_c import y\n'
           'importlib.util.spec_from_file_location("m", "dir/test_d.py")\n'
           'import gf2_smb2\n')
    got = {n for n in imported_names(src) if n.startswith('test_')}
    assert got == {'test_a', 'test_b', 'test_c', 'test_d'}


def test_there_are_test_modules():
    mods = find_test_modules()
    assert len(mods) >= 40, sorted(mods)


def test_no_test_module_imports_another():
    mods = find_test_modules()
    known = set(mods.values())
    found = []
    for path, name in sorted(mods.items()):
        with open(os.path.join(TOP, path)) as f:
            src = f.read()
        other = sorted((imported_names(src) & known) - {name})
        if other:
            found.append('%s imports %s' % (path, ', '.join(other)))
    assert not found, ('test modules import other test modules (move what '
                       'they share into a helper module): %s'
                       % '; '.join(found))

