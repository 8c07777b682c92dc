"""The stack smbd's log files: where each ends now, and the text written
to them since.

    before = logs(stack)
    ... connect ...
    assert 'warning' in new_text(stack, before)
"""

import glob
import os


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
