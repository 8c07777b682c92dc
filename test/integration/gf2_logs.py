"""The stack smbd's log files: where each ends now, and the text written
to them since, or the panics logged since.

    before = logs(stack)
    ... connect ...
    assert 'warning' in new_text(stack, before)

    offsets = log_offsets(stack)
    ... requests served by the smbd children pids ...
    assert not panics_since(stack, offsets, pids)
"""

import glob
import os
import re


def logs(stack):
    """{log file: its size now} of the stack's smbd (SMB_LOGDIR/log.*)."""
    return {f: os.path.getsize(f)
            for f in glob.glob(os.path.join(stack['SMB_LOGDIR'], 'log.*'))}


def new_text(stack, before):
    """What every log file gained since before (logs()); a file that was
    not there then, all of it."""
    out = []
    for f in glob.glob(os.path.join(stack['SMB_LOGDIR'], 'log.*')):
        with open(f, errors='replace') as fh:
            fh.seek(before.get(f, 0))
            out.append(fh.read())
    return '\n'.join(out)



def lines_since(stack, needle, before):
    """The lines with needle the log files got since before (logs()), so
    that lines of earlier runs do not count; a file that shrank (rotated)
    is read from its start."""
    hits = []
    for path in glob.glob(os.path.join(stack['SMB_LOGDIR'], 'log.*')):
        with open(path, errors='replace') as f:
            off = before.get(path, 0)
            f.seek(off if off <= os.path.getsize(path) else 0)
            hits += [line.strip() for line in f if needle in line]
    return hits


def log_offsets(stack):
    """{log file name: its size now} in SMB_LOGDIR."""
    d = stack['SMB_LOGDIR']
    return {f: os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)
            if f.startswith('log.')}


def panics_since(stack, offsets, pids):
    """PANIC / INTERNAL ERROR lines the smbd logs got since offsets
    (log_offsets()) that name one of pids."""
    d = stack['SMB_LOGDIR']
    found = []
    for f in os.listdir(d):
        if not f.startswith('log.'):
            continue
        with open(os.path.join(d, f), 'rb') as fh:
            fh.seek(offsets.get(f, 0))
            text = fh.read().decode('utf-8', 'replace')
        for line in text.splitlines():
            m = re.search(r'(?:PANIC \(pid|in pid) (\d+)', line)
            if m and int(m.group(1)) in pids:
                found.append('%s: %s' % (f, line.strip()))
    return found
