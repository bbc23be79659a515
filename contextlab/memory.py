"""Memory a request freed goes back to the system when the request is done.

CPython hands freed memory back to C's ``malloc``, and glibc's ``malloc`` keeps it: the pages of
a request that decoded a deep turn of a 500 MB session (hundreds of MB of entries and their
request, all freed once the page is sent) stay in the process as long as it lives, and the
next large request, in another part of the heap, adds its own. Measured on the load test's
large session: a worker at 392 MB after its first deep turn is at 215 MB after
``malloc_trim(0)``, which costs 4-8 ms.

Nor is everything a request made freed when it ends. A page's objects form reference cycles
(Django's template contexts hold each other), and the inspector builds a deep turn with the
cyclic collector paused, so a turn's whole projection, tens of MB, outlived its request in the
collector's older generations until a rare full pass: the next deep turn came on top of it.
Measured on the same session, a worker settled at 305 MB between deep turns and peaked at
410-480 MB; collecting the young generations after each (15-120 ms under the load test) it
settles at 215 MB and peaks at 280-350 MB.

So after each request (Django's ``request_finished``: the response has been sent) a web process
whose resident size has grown more than ``CONTEXTLAB_TRIM_ABOVE_BYTES`` over what it held after
its last trim collects its young generations and calls ``malloc_trim(0)``. Reading the
resident size is one read of ``/proc/self/statm``; where there is no glibc (or no /proc)
nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import threading
from functools import cache
from typing import Any

from django.conf import settings

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_lock = threading.Lock()
# The resident bytes right after the last trim (the floor the next growth is measured from).
_floor = 0


def resident_bytes() -> int:
    """This process's resident set size, in bytes (0 where /proc is not there)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


@cache
def _malloc_trim() -> Any:
    """glibc's ``malloc_trim``, or None (musl, macOS)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


# glibc's mallopt parameter: how many malloc arenas (heaps) the process may have.
_M_ARENA_MAX = -8


def one_heap() -> bool:
    """Threads started from now on allocate from the process's main malloc arena, as its main
    thread does (glibc's M_ARENA_MAX 1), instead of one heap each; whether it could be set.

    A thread that builds a deep turn (``contextlab.heavy``) would otherwise free its hundreds of
    MB into a heap of its own, which the main thread's next request never reuses: measured over
    twenty deep turns of the load test's large session, a worker settled 10-12 MB higher and
    peaked 12 MB higher than with the same turns built in the main thread; with one heap, the
    same figures as in the main thread. Under the GIL the arenas' locks are never contended."""
    if _malloc_trim() is None:  # not glibc
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    return bool(libc.mallopt(_M_ARENA_MAX, 1))


def give_back() -> int:
    """Return the free pages of the heap to the system now; the resident bytes after it."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
    return resident_bytes()


def trim_if_grown(**kwargs: Any) -> bool:
    """``request_finished``'s receiver: collect and trim when the process grew past its floor by
    more than ``CONTEXTLAB_TRIM_ABOVE_BYTES`` (0 turns it off). Whether it trimmed."""
    global _floor
    above = settings.CONTEXTLAB_TRIM_ABOVE_BYTES
    if above <= 0 or _malloc_trim() is None:
        return False
    now = resident_bytes()
    if not now or now - _floor <= above:
        if now and now < _floor:
            _floor = now  # the process shrank by itself: measure from there
        return False
    with _lock:
        # The request's own cycles: made during it, so in the young generations. Not a full
        # collection: with a large session's index loaded that walks millions of objects
        # (0.5-0.7 s, measured under the load test) and finds nothing more.
        gc.collect(1)
        _floor = give_back()
    return True
