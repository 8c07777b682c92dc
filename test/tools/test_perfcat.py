"""test/bench/perfcat's sorting of profile samples: each sample goes to
the kind of the first syscall or fault in its call chain, else to memcpy
or other user or kernel code by its own frame; threads by their id and
name.  Without perf: chains as perf script prints them.

    python3 -m pytest -v test/tools/test_perfcat.py
"""

import importlib.machinery
import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, '..', 'bench', 'perfcat')
_loader = importlib.machinery.SourceFileLoader('perfcat', PATH)
_spec = importlib.util.spec_from_loader('perfcat', _loader)
perfcat = importlib.util.module_from_spec(_spec)
_loader.exec_module(perfcat)

USER = '7f0c80ca6c5f [unknown] (/usr/lib/x86_64-linux-gnu/libgfapi.so.0)'


def k(*frames):
    return perfcat.kind(list(frames), {})


def test_fault_before_syscall():
    # a fault taken inside a syscall's copy is a fault, not the syscall
    assert k('ffffffff8 clear_page_erms ([kernel.kallsyms])',
             'ffffffff8 asm_exc_page_fault ([kernel.kallsyms])',
             'ffffffff8 __sys_sendmsg ([kernel.kallsyms])',
             'ffffffff8 do_syscall_64 ([kernel.kallsyms])',
             USER) == 'page fault'


def test_syscalls_by_kind():
    assert k('ffffffff8 _copy_from_iter ([kernel.kallsyms])',
             'ffffffff8 __sys_sendmsg ([kernel.kallsyms])',
             'ffffffff8 do_syscall_64 ([kernel.kallsyms])',
             USER) == 'sendmsg/writev/write'
    assert k('ffffffff8 _copy_to_iter ([kernel.kallsyms])',
             'ffffffff8 do_readv ([kernel.kallsyms])',
             'ffffffff8 do_syscall_64 ([kernel.kallsyms])',
             USER) == 'recv/readv/read'
    assert k('ffffffff8 futex_wait ([kernel.kallsyms])',
             'ffffffff8 do_futex ([kernel.kallsyms])',
             'ffffffff8 do_syscall_64 ([kernel.kallsyms])',
             USER) == 'futex'
    assert k('ffffffff8 getpid ([kernel.kallsyms])',
             'ffffffff8 do_syscall_64 ([kernel.kallsyms])',
             USER) == 'other syscall'


def test_user_frames():
    assert k('7f0c80 __memmove_avx512_unaligned_erms+0x2f '
             '(/usr/lib/x86_64-linux-gnu/libc.so.6)') == 'memcpy'
    assert k('7f0c80 talloc_free (/usr/lib/libtalloc.so.2)') == 'other user'
    assert k('ffffffff8 schedule ([kernel.kallsyms])') == 'other kernel'
    assert k() == 'other user'


def test_threads():
    assert perfcat.thread('smbd[10.250.2.1', 100, 100) == 'main'
    # a pool thread may carry the main thread's name
    assert perfcat.thread('smbd[10.250.2.1', 100, 107) == 'others'
    assert perfcat.thread('glfs_epoll001', 100, 103) == 'gfapi epoll'
    assert perfcat.thread('glfs_timer', 100, 101) == 'gfapi other'
