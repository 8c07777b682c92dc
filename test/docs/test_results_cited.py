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

from gf2_results import TOP, all_citations, results_citations


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
