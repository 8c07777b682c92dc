"""What the test stacks of one machine share: who stops glusterd (no test
stack, no glusterd, no root needed).

    python3 -m pytest test/docs/test_stack_shared.py

test/stack's `down` runs stop_glusterd_if_last (test/lib/stack/
gluster.sh): glusterd is stopped only if a `test/stack up` started it
(this stack's state, or the pid another stack's `up` recorded in
/run/gf2-stack/glusterd-started) and nothing else uses it (no volume left,
no live process registered in /run/gf2-stack/glusterd-users/).  Here the
function runs in bash with the stack's own files sourced, against a
stand-in glusterd (a `sleep` process of the test: the real kill_pids
stops it) and a stand-in gluster CLI (the volume list a file gives); the
shared directory and the stack's state are in a temporary directory.
The stand-ins are started by a shell that exits at once, so that they are
not this process's children: a stopped one is reaped by init and gone,
as a glusterd is, not a zombie that kill -0 still finds.
Each case checks whether the stand-in process was stopped and what the
shared files hold afterwards.
"""

import os
import signal
import subprocess
import textwrap
import time

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
LIB = os.path.join(TOP, 'test', 'lib', 'stack')

SCRIPT = textwrap.dedent('''\
    set -euo pipefail
    ROOT=$1 SHARED=$2 FAKE_PID=$3 VOLUMES=$4
    . "$LIB/common.sh"
    . "$LIB/state.sh"
    . "$LIB/gluster.sh"
    HOST_SHARED=$SHARED
    HOST_LOCK=$SHARED/lock
    GLUSTERD_MARK=$SHARED/glusterd-started
    GLUSTERD_USERS=$SHARED/glusterd-users
    host_pgrep() {
        if [ "$*" = "-x glusterd" ] && kill -0 "$FAKE_PID" 2>/dev/null; then
            echo "$FAKE_PID"
        fi
    }
    glusterd_answers() { kill -0 "$FAKE_PID" 2>/dev/null && [ ! -e "$SHARED/mute" ]; }
    gl() {
        [ "$*" = "volume list" ] || return 1
        if [ -s "$VOLUMES" ]; then cat "$VOLUMES"; else echo "No volumes present in cluster"; fi
    }
    take_host_lock
    stop_glusterd_if_last
    drop_host_lock
''')


class Machine:
    """A stand-in glusterd, the shared directory and one stack's state."""

    def __init__(self, tmp):
        self.root = str(tmp / 'checkout')
        self.shared = str(tmp / 'run-gf2-stack')
        self.volumes = str(tmp / 'volumes')
        os.makedirs(os.path.join(self.root, '.stack'))
        os.makedirs(os.path.join(self.shared, 'glusterd-users'))
        open(self.volumes, 'w').close()
        self.pids = []
        self.glusterd = self.orphan()

    def orphan(self):
        """The pid of a `sleep` that is not our child."""
        out = subprocess.run(['bash', '-c', 'sleep 300 >/dev/null 2>&1 & echo $!'],
                             stdout=subprocess.PIPE, text=True, check=True)
        pid = int(out.stdout)
        self.pids.append(pid)
        return pid

    def alive(self, pid):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True

    def close(self):
        for pid in self.pids:
            if self.alive(pid):
                os.kill(pid, signal.SIGKILL)

    def state(self, started):
        with open(os.path.join(self.root, '.stack', 'state'), 'w') as f:
            f.write('STARTED_GLUSTERD=%d\n' % started)

    def mark(self, pid):
        with open(os.path.join(self.shared, 'glusterd-started'), 'w') as f:
            f.write('%d\n' % pid)

    def other_volumes(self, *names):
        with open(self.volumes, 'w') as f:
            f.write(''.join(n + '\n' for n in names))

    def user(self, pid, what='test'):
        path = os.path.join(self.shared, 'glusterd-users', str(pid))
        with open(path, 'w') as f:
            f.write(what + '\n')
        return path

    def live_user(self):
        return self.user(self.orphan(), 'test/run-all --only cluster')

    def dead_pid(self):
        p = subprocess.Popen(['true'])
        p.wait()
        return p.pid

    def down(self):
        """stop_glusterd_if_last as down runs it -> (stopped, output)."""
        env = dict(os.environ, LIB=LIB)
        env.pop('GF2_STACK_DIR', None)
        r = subprocess.run(['bash', '-c', SCRIPT, 'down', self.root,
                            self.shared, str(self.glusterd),
                            self.volumes],
                           env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=60)
        assert r.returncode == 0, r.stdout
        deadline = time.time() + 0.5
        while self.alive(self.glusterd) and time.time() < deadline:
            time.sleep(0.05)
        return not self.alive(self.glusterd), r.stdout

    def mute(self):
        """glusterd runs but does not answer the CLI (busy, or hung)."""
        open(os.path.join(self.shared, 'mute'), 'w').close()

    def marked(self):
        return os.path.exists(os.path.join(self.shared, 'glusterd-started'))


@pytest.fixture
def m(tmp_path):
    machine = Machine(tmp_path)
    yield machine
    machine.close()


def test_single_stack_that_started_glusterd_stops_it(m):
    m.state(1)
    m.mark(m.glusterd)
    stopped, out = m.down()
    assert stopped, out
    assert 'stopping glusterd' in out
    assert not m.marked()


def test_another_stacks_volume_keeps_glusterd(m):
    m.state(1)
    m.mark(m.glusterd)
    m.other_volumes('gf2test-torture')
    stopped, out = m.down()
    assert not stopped, out
    assert 'other volumes: gf2test-torture' in out
    assert m.marked()


def test_last_stack_stops_glusterd_another_stack_started(m):
    # this stack found glusterd running (its state says so); another
    # stack's up started it and has gone down since, leaving it running
    m.state(0)
    m.mark(m.glusterd)
    stopped, out = m.down()
    assert stopped, out
    assert not m.marked()


def test_glusterd_that_does_not_answer_is_left_running(m):
    # a glusterd too busy to list its volumes may serve another stack's:
    # not knowing is no reason to stop it
    m.state(1)
    m.mark(m.glusterd)
    m.mute()
    stopped, out = m.down()
    assert not stopped, out
    assert 'does not answer' in out
    assert m.marked()


def test_registered_user_keeps_glusterd(m):
    m.state(1)
    m.mark(m.glusterd)
    m.live_user()
    stopped, out = m.down()
    assert not stopped, out
    assert 'in use by' in out and 'test/run-all --only cluster' in out


def test_dead_registered_user_is_dropped(m):
    m.state(1)
    stale = m.user(m.dead_pid())
    stopped, out = m.down()
    assert stopped, out
    assert not os.path.exists(stale)


def test_glusterd_no_stack_started_is_left_alone(m):
    # neither this stack's state nor the record: glusterd was there
    # before any stack
    m.state(0)
    stopped, out = m.down()
    assert not stopped, out
    assert out == ''


def test_record_of_an_earlier_glusterd_is_not_this_one(m):
    # a stack started a glusterd that has gone since (the pid recorded is
    # no longer glusterd's): the running one is not a stack's
    m.state(0)
    m.mark(m.dead_pid())
    stopped, out = m.down()
    assert not stopped, out
