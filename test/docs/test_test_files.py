"""The tests' own tree (no test stack needed).

    python3 -m pytest test/docs/test_test_files.py

  - no test module (test_*.py anywhere under test/) imports another one:
    what tests share (clients, fixtures, helpers) lives in helper modules
    beside them (gf2_*.py, conftest.py), so that running, moving or
    removing one test file never changes another;
  - docs/hacking.md's "### Every test file" section names every test file
    and every helper of test/integration, and names no file that does not
    exist.  Test files: test_*.py and test_*.c under test/, the fuzz
    harnesses test/fuzz/fuzz_*.c, and the commands that run tests: every
    executable under test/ but the harness and tools in NOT_TESTS.
"""

import ast
import os
import re
import subprocess

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
TEST_DIR = os.path.join(TOP, 'test')
HACKING = os.path.join(TOP, 'docs', 'hacking.md')

# Executables under test/ that run no tests: the stack and the cluster
# they run on, the demo, the platform roots, a sanitizer report library,
# and what has sections of its own in docs/hacking.md (the benchmarks) or
# serves the tests (the tools, the stack's and cluster's scripts).
NOT_TESTS = ('test/stack', 'test/cluster', 'test/demo', 'test/platform/root',
             'test/asan/sanitizers.py')
NOT_TESTS_UNDER = ('test/bench/', 'test/tools/', 'test/lib/')


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


def tracked_files():
    """The files under test/, relative to TOP: those git tracks, or every
    file when this is not a git checkout."""
    p = subprocess.run(['git', '-C', TOP, 'ls-files', '-z', 'test'],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if p.returncode == 0 and p.stdout:
        return sorted(f for f in p.stdout.decode().split('\0') if f)
    out = []
    for root, dirs, names in os.walk(TEST_DIR):
        dirs[:] = [d for d in dirs if not d.startswith('.') and
                   d not in ('__pycache__', 'results')]
        out += [os.path.relpath(os.path.join(root, n), TOP) for n in names]
    return sorted(out)


def is_test_file(path):
    d, name = os.path.split(path)
    if path in NOT_TESTS or path.startswith(NOT_TESTS_UNDER):
        return False
    if name.startswith('test_') and name.endswith(('.py', '.c')):
        return True
    if d == 'test/fuzz' and name.startswith('fuzz_') and name.endswith('.c'):
        return True
    if d == 'test/integration' and (name == 'conftest.py' or
                                    name.startswith('gf2_') or
                                    name.endswith('.c')):
        return True                 # the helpers the tests share
    return os.access(os.path.join(TOP, path), os.X_OK)


def listed_files(text):
    """The paths the "### Every test file" section lists (`- `PATH`: ...`)."""
    m = re.search(r'^### Every test file[ \t]*\n(.*?)(?=^## |^### |\Z)',
                  text, re.M | re.S)
    assert m, 'docs/hacking.md has no "### Every test file" section'
    return re.findall(r'^- `(test/[^`]+)`:', m.group(1), re.M)


def test_list_parser():
    text = ('## Tests\n### Every test file\n\nIntro.\n\n'
            '- `test/unit/test_a.c`: proves a.\n'
            '- `test/run-all`: runs them.\n'
            'not a line: `test/x.py`\n'
            '### Next\n- `test/unit/test_b.c`: elsewhere.\n')
    assert listed_files(text) == ['test/unit/test_a.c', 'test/run-all']


def test_recognises_test_files():
    assert is_test_file('test/integration/test_basic.py')
    assert is_test_file('test/unit/test_mdcache.c')
    assert is_test_file('test/fuzz/fuzz_options.c')
    assert is_test_file('test/integration/gf2_smb2.py')
    assert is_test_file('test/run-all')
    assert not is_test_file('test/stack')
    assert not is_test_file('test/bench/run')
    assert not is_test_file('test/torture/known-failures')


def test_every_test_file_listed_once():
    with open(HACKING) as f:
        listed = listed_files(f.read())
    twice = sorted({p for p in listed if listed.count(p) > 1})
    assert not twice, 'listed more than once: %s' % ', '.join(twice)
    present = {p for p in tracked_files() if is_test_file(p)}
    assert len(present) >= 60, sorted(present)
    missing = sorted(present - set(listed))
    assert not missing, ('docs/hacking.md "Every test file" does not list '
                         '(add a line of what each proves): %s'
                         % ', '.join(missing))


def test_every_listed_file_exists():
    with open(HACKING) as f:
        listed = listed_files(f.read())
    gone = sorted(p for p in listed if not os.path.isfile(os.path.join(TOP, p)))
    assert not gone, ('docs/hacking.md "Every test file" lists files that '
                      'do not exist: %s' % ', '.join(gone))
