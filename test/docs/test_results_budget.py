"""results/ within its budget, test/bench/ the tools only (no test stack
needed).

    python3 -m pytest test/docs/test_results_budget.py

The rules (docs/hacking.md, "Results"): every committed run is a folder
results/KIND-PLATFORM-COMMIT with its results.md (which command, which
commit, the figures), its chart and summary.json; its per-sample files
(results.json, results.csv, log.txt) stay only while README or docs/ cite
it; a run holds at most RUN_BUDGET bytes and results/ at most
TOTAL_BUDGET (gf2_results.py); test/bench/ holds no run and no report.
"""

import os

import gf2_results
from gf2_results import (BENCH, RESULTS, RUN_BUDGET, TOTAL_BUDGET,
                         all_citations, budget_problems)


def cited_runs():
    """The names of the folders of results/ that README or docs/ cite."""
    return {folder[len('results/'):] for folder, _ in all_citations()
            if folder.startswith('results/')}


def make_run(results, name, files):
    path = os.path.join(results, name)
    os.makedirs(path)
    for f, size in files.items():
        with open(os.path.join(path, f), 'wb') as out:
            out.write(b'x' * size)


def scratch_tree(tmp_path):
    results = str(tmp_path / 'results')
    bench = str(tmp_path / 'test' / 'bench')
    os.makedirs(os.path.join(bench, 'lib'))
    os.makedirs(results)
    with open(os.path.join(bench, 'run'), 'w') as f:
        f.write('#!/usr/bin/python3\n')
    return results, bench


def test_a_tidy_tree_passes(tmp_path):
    results, bench = scratch_tree(tmp_path)
    make_run(results, 'run-bookworm-1234567',
             {'results.md': 100, 'chart.png': 100, 'results.json': 100})
    make_run(results, 'run-bookworm-7654321',
             {'results.md': 100, 'summary.json': 100})
    assert budget_problems(results, bench, {'run-bookworm-1234567'}) == []


def test_each_rule_is_reported(tmp_path):
    results, bench = scratch_tree(tmp_path)
    # over a run's budget
    make_run(results, 'run-bookworm-1111111',
             {'results.md': 10, 'results.json': RUN_BUDGET})
    # per-sample files in a run nobody cites; no results.md; a bad name
    make_run(results, 'scratch', {'log.txt': 10})
    # a run and a stray report in test/bench
    make_run(bench, 'run-bookworm-2222222', {'results.md': 10})
    with open(os.path.join(bench, 'lib', 'results.json'), 'w') as f:
        f.write('{}')
    got = budget_problems(results, bench, {'run-bookworm-1111111'})
    assert got == [
        'results/run-bookworm-1111111 holds %d bytes, over the %d of a run'
        % (RUN_BUDGET + 10, RUN_BUDGET),
        'results/scratch has no results.md (which command, which commit, '
        'the figures)',
        'results/scratch is not named KIND-PLATFORM-COMMIT',
        'results/scratch holds per-sample files (log.txt) but README and '
        'docs/ do not cite it: keep results.md, the chart and summary.json',
        'test/bench/run-bookworm-2222222 is a folder: test/bench holds the '
        'tools only (runs go to results/)',
        'test/bench/lib/results.json is a run\'s report: test/bench holds '
        'the tools only (runs go to results/)',
        'test/bench/run-bookworm-2222222/results.md is a run\'s report: '
        'test/bench holds the tools only (runs go to results/)',
    ]


def test_the_total_budget_is_reported(tmp_path, monkeypatch):
    results, bench = scratch_tree(tmp_path)
    monkeypatch.setattr(gf2_results, 'TOTAL_BUDGET', 150)
    for n in ('run-bookworm-1111111', 'run-bookworm-2222222'):
        make_run(results, n, {'results.md': 100})
    assert budget_problems(results, bench, set()) == [
        'results/ holds 200 bytes, over its budget of 150']


def test_results_and_bench_keep_the_rules():
    assert os.path.isdir(RESULTS)
    problems = budget_problems(RESULTS, BENCH, cited_runs())
    assert not problems, '; '.join(problems)


def test_the_budget_is_stated_in_hacking():
    with open(os.path.join(gf2_results.TOP, 'docs', 'hacking.md')) as f:
        text = f.read()
    assert '%d MB' % (TOTAL_BUDGET // 1000000) in text
    assert '%d MB' % (RUN_BUDGET // 1000000) in text
