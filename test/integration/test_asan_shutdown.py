"""smbd stopped under AddressSanitizer while glusterfs2 has I/O in flight.

Runs test/asan/shutdown (its help says how): the sanitizer build of the
module in a private smbd with libasan preloaded, the stack's bricks
slowed by Gluster's delay-gen (READ, WRITE, FSYNC), five clients with
reads, writes, fsyncs, prefetch reads and write cache gathers in flight,
then smbd stopped: SIGTERM to the main smbd, SIGTERM to one serving child
alone, and clients killed at the moment of the SIGTERM, six rounds.  It
passes when every smbd process exits in bounded time, no process exits
while its glfs_fini still runs, the smbd logs have no PANIC, and no
ASan/UBSan report has a glusterfs2 frame nor is any error report at all.
The runner also fails unless the windows below were really entered: a
volume released at exit with calls in flight, prefetch, write cache
gathers, fsyncs and upcalls seen in the serving processes.

The windows it exercises, and what makes each safe:

- A completion that arrives after smbd freed its event context
  (exit_server: global_event_context_free) calls
  tevent_threaded_schedule_immediate on a threaded context that is never
  freed (gf2_get_tctx, source/gf2_async.c: it hangs off the NULL
  context).  tevent's context destructor cleared that threaded context's
  event context under its mutex, so the call drops the completion; one
  that took the mutex first is queued on the dying context and dropped
  with it, never run.  Either way nothing of smbd's is touched: the
  request was freed at SHUTDOWN_CLOSE (smbd frees pending aio requests
  once no connection is left), which only orphaned the gf2_io
  (gf2_rw_state_destructor), and an orphan whose completion never runs
  is never freed, so gfapi may still write into its buffer.
- A completion between the tree disconnect and the end of the loop: the
  disconnect found calls in flight and deferred the volume's release
  (gf2_volume_put, gf2_hold); no completion can release it now, so the
  sentinel under the event context (gf2_tctx_sentinel_destructor) calls
  gf2_volume_loop_gone, which hands every volume without users to a
  glfs_fini reaper (source/gf2_volume.c).
- gfapi callbacks while that glfs_fini runs: glfs_fini waits up to 10 s
  for the call pool to drain before it tears anything down, so the
  callbacks of calls in flight run on an intact instance (gfapi's
  glfs_io_async_cbk uses the glfs_fd and the instance) and ours
  (gf2_io_cbk) touches only the orphaned gf2_io, the never-freed threaded
  context and, for a write cache gather, the call record under the
  gf2_io and a static mutex (gf2_wc_thread_fn).  Handles whose close was
  deferred keep their glfs_fd open, so gfapi neither drops those
  callbacks nor destroys a glfs_fd inside one.  Calls that outlive the
  10 s (a run with --delay-ms 12000) are unwound by the client
  translator's disconnect before glfs_fini waits for CHILD_DOWN, still
  before the instance is freed.  Upcalls are unregistered before
  glfs_fini (gf2_volume_destroy); one being delivered is a synctask
  holding a call frame, which glfs_fini's wait covers, and
  gf2_upcall_cbk touches only the upcall gfapi hands it and static state.
- exit() while reapers run: an atexit handler waits for them, at most
  20 s (gf2_reap_wait), and logs when it gives up; the runner fails a
  round in which that happened.
- The write cache at shutdown: closing a handle drains its queue in the
  main thread, which waits on a condition variable that Gluster's thread
  signals (gf2_wc_drain_sync), so what was acknowledged reaches the
  bricks before the volume goes.

One window is tevent's, not the module's, and no sanitizer sees it:
_tevent_threaded_schedule_immediate writes the wakeup after it has
released its locks, to a descriptor number it copied under them; if the
context is freed in between, the write meets a closed descriptor
(EBADF), or one opened again in that instant.

Takes about 3 minutes (a first run also builds build-asan/).
GF2_ASAN_SHUTDOWN_PORT overrides the private smbd's port (the stack's
SMB_PORT + 8, 4458 for the default stack).
"""

import os
import subprocess

from conftest import TOP


def test_asan_smbd_stopped_with_io_in_flight(stack):
    p = subprocess.run([os.path.join(TOP, 'test', 'asan', 'shutdown')],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, errors='replace',
                       timeout=900)
    out = p.stdout
    tail = [l for l in out.splitlines() if l.startswith(('FAIL', 'sanitizer'
                                                        ' reports:'))]
    assert p.returncode == 0, '\n'.join(tail) + '\n\n' + out[-60000:]
