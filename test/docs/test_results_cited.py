"""Every results folder that README and docs/ cite is in the tree (no test
stack needed).

    python3 -m pytest test/docs/test_results_cited.py

A results folder is a directory under results/ or test/soak/ that holds
one run's report (results.md, summary.json, chart.png...).  The documents
cite it as results/NAME/ or results/NAME/FILE, or bare as results/NAME
when NAME ends with the commit it was run at (a run is named
KIND-PLATFORM-COMMIT, e.g. run-bookworm-e61241d).  A file cited inside
such a folder must exist too.  test/bench/ holds the tools only
(test/docs/test_results_budget.py).
"""

import os
import re

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
DOCS = os.path.join(TOP, 'docs')
README = os.path.join(TOP, 'README')

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
    cites = {}
    for doc in cited_documents():
        with open(doc, errors='replace') as f:
            for folder, path in results_citations(f.read()):
                cites.setdefault((folder, path), []).append(
                    os.path.relpath(doc, TOP))
    return cites


def test_parser_finds_folders_and_files():
    text = ('see results/run-bookworm-e61241d/results.md. and '
            'results/layers-bookworm-76c19be: `test/bench/run --out x`, '
            'test/soak/latest-20min/ and test/bench/lib/cli.py, '
            'test/bench/mdfloor, test/results/bench/x-1234567 and '
            'build/test/bench/gone-1234567/ and test/bench/old-1234567/')
    assert results_citations(text) == {
        ('results/run-bookworm-e61241d',
         'results/run-bookworm-e61241d/results.md'),
        ('results/layers-bookworm-76c19be',
         'results/layers-bookworm-76c19be'),
        ('test/soak/latest-20min', 'test/soak/latest-20min'),
        ('test/bench/old-1234567', 'test/bench/old-1234567'),
    }


def test_docs_cite_results_folders():
    # the check below means something only while the documents cite runs
    folders = {folder for folder, _ in all_citations()}
    assert len(folders) >= 10, sorted(folders)


def test_every_cited_results_folder_exists():
    missing = []
    for (folder, path), docs in sorted(all_citations().items()):
        if not os.path.isdir(os.path.join(TOP, folder)):
            missing.append('%s (folder; cited by %s)' % (folder, ', '.join(docs)))
        elif not os.path.exists(os.path.join(TOP, path)):
            missing.append('%s (cited by %s)' % (path, ', '.join(docs)))
    assert not missing, 'cited but not in the tree: %s' % '; '.join(missing)
