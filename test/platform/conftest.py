"""The host-side tests of the test platforms (test/platform/root).

A test skipped here is always named in the summary with its reason (the
one allowed reason for the platform tests: the platform's root is not
built), so that a run without a platform never looks like a pass.
"""


def pytest_terminal_summary(terminalreporter):
    skipped = terminalreporter.stats.get('skipped', [])
    if not skipped:
        return
    terminalreporter.write_sep('=', 'skipped: %d (not run, with the reason)'
                               % len(skipped))
    for rep in skipped:
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) \
            else str(rep.longrepr)
        if reason.startswith('Skipped: '):
            reason = reason[len('Skipped: '):]
        terminalreporter.write_line('SKIPPED %s: %s' % (rep.nodeid, reason))
