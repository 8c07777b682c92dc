"""What the results checks share (test_results_cited.py,
test_results_budget.py): the runs README and docs/ cite, and the budget
of results/.

A results folder is a directory under results/ or test/soak/ that holds
one run's report (results.md, summary.json, chart.png...).  The documents
cite it as results/NAME/ or results/NAME/FILE, or bare as results/NAME
when NAME ends with the commit it was run at (a run is named
KIND-PLATFORM-COMMIT, e.g. run-bookworm-e61241d).  test/bench/ holds the
tools only.
"""

import os
import re

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
DOCS = os.path.join(TOP, 'docs')
README = os.path.join(TOP, 'README')
RESULTS = os.path.join(TOP, 'results')
BENCH = os.path.join(TOP, 'test', 'bench')

# The budget (docs/hacking.md, "Results"): results/ as a whole, and each
# run in it, in bytes of its files.
TOTAL_BUDGET = 10 * 1000 * 1000
RUN_BUDGET = 1000 * 1000
# Per-sample files: only in a run README or docs/ cite.
RAW_FILES = ('results.json', 'results.csv', 'log.txt')
# What a run folder is known by, in test/bench/ as anywhere: its report.
REPORT_FILES = ('results.md', 'report.md', 'summary.json') + RAW_FILES
# The tools' folders in test/bench/ (everything else there is a file).
BENCH_CODE_DIRS = {'lib'}

# results/NAME, test/soak/NAME or test/bench/NAME (where no run may be:
# cited there, it is missing), then an optional /FILE; not preceded by a
# path character (so that test/results/... is not taken for it).
CITE_RE = re.compile(
    r'(?<![\w./-])((?:results|test/(?:bench|soak))/[\w.+-]+)(/[\w.+/-]*)?')
# A folder named by its commit: NAME-<7 to 12 hex digits>, with an optional
# -word after it (run-bookworm-831f0f1-rerun, leasewrite-...-b27154f-7reps,
# run-bookworm-5d5aea5-2).
COMMIT_NAME_RE = re.compile(r'-[0-9a-f]{7,12}(?:-[a-z0-9]+)?$')
# Folders of code, not of results.
CODE_FOLDERS = {'test/bench/lib'}


def cited_documents():
    docs = [README]
    for root, dirs, names in os.walk(DOCS):
        dirs[:] = [d for d in dirs if not d.startswith('.')]
        docs += [os.path.join(root, n) for n in names if not n.startswith('.')]
    return sorted(docs)


def results_citations(text):
    """(folder, path) pairs: each results folder cited and the exact path
    cited in it (the folder itself when no file is named)."""
    found = set()
    for m in CITE_RE.finditer(text):
        folder = m.group(1).rstrip('.,;:')
        rest = (m.group(2) or '').rstrip('.,;:')
        if folder in CODE_FOLDERS:
            continue
        if not rest and not COMMIT_NAME_RE.search(folder):
            continue            # test/bench/run, test/bench/mdfloor: tools
        found.add((folder, folder + rest.rstrip('/')))
    return found


def all_citations():
    """{(folder, path): [documents citing it]} over README and docs/."""
    cites = {}
    for doc in cited_documents():
        with open(doc, errors='replace') as f:
            for folder, path in results_citations(f.read()):
                cites.setdefault((folder, path), []).append(
                    os.path.relpath(doc, TOP))
    return cites


def tree_bytes(path):
    """The bytes of the files below path (links not followed)."""
    total = 0
    for root, dirs, names in os.walk(path):
        dirs[:] = [d for d in dirs if d != '__pycache__']
        for n in names:
            p = os.path.join(root, n)
            if not os.path.islink(p):
                total += os.path.getsize(p)
    return total


def budget_problems(results, bench, cited):
    """What breaks the rules of docs/hacking.md's "Results" in the folders
    results and bench (the tree's results/ and test/bench/); cited: the
    names of the runs in results that README or docs/ cite.  bench is
    TOP/test/bench; the sentences name paths from TOP.  A list of
    sentences, empty when all is well."""
    out = []
    top = os.path.dirname(os.path.dirname(os.path.abspath(bench)))
    runs = sorted(d for d in os.listdir(results)
                  if os.path.isdir(os.path.join(results, d))) \
        if os.path.isdir(results) else []
    total = 0
    for run in runs:
        path = os.path.join(results, run)
        size = tree_bytes(path)
        total += size
        if not os.path.exists(os.path.join(path, 'results.md')):
            out.append('results/%s has no results.md (which command, which '
                       'commit, the figures)' % run)
        if not COMMIT_NAME_RE.search(run):
            out.append('results/%s is not named KIND-PLATFORM-COMMIT' % run)
        if size > RUN_BUDGET:
            out.append('results/%s holds %d bytes, over the %d of a run' % (
                run, size, RUN_BUDGET))
        raw = [f for f in RAW_FILES if os.path.exists(os.path.join(path, f))]
        if raw and run not in cited:
            out.append('results/%s holds per-sample files (%s) but README '
                       'and docs/ do not cite it: keep results.md, the chart '
                       'and summary.json' % (run, ', '.join(raw)))
    if total > TOTAL_BUDGET:
        out.append('results/ holds %d bytes, over its budget of %d' % (
            total, TOTAL_BUDGET))
    for name in sorted(os.listdir(bench)):
        p = os.path.join(bench, name)
        if os.path.isdir(p) and name not in BENCH_CODE_DIRS | {'__pycache__'}:
            out.append('test/bench/%s is a folder: test/bench holds the '
                       'tools only (runs go to results/)' % name)
    for root, dirs, names in os.walk(bench):
        dirs[:] = sorted(d for d in dirs if d != '__pycache__')
        for n in sorted(names):
            if n in REPORT_FILES:
                out.append('%s is a run\'s report: test/bench holds the '
                           'tools only (runs go to results/)' %
                           os.path.relpath(os.path.join(root, n), top))
    return out
