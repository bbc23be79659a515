"""Heavy work of a web request (a deep turn of a large session) done at a lower CPU priority, so
that it cannot slow down the other users' pages.

Under the load test (2 cores, 4 workers) a large session's turn costs 0.4-1.5 s of CPU: two of
them at once left every other worker half a core, and the ordinary pages' p95 was that queueing,
not their own work. Linux schedules threads, and a thread's nice value is its own
(``setpriority`` on a thread id): work done on a thread of nice 10 gets about a tenth of what a
thread of nice 0 gets when both want a core, and everything when nobody else does. An
unprivileged process may lower a priority but never raise it back, so a worker cannot lower its
own for one request: the work moves to a thread of this process that keeps the lower priority
for its life (``run``), and the request's thread waits for it.

What the work sees is the request's own: its context variables are copied (the time budget's
deadline, the client whose departure stops it), its database connection is the lane thread's own,
with the request's remaining budget as PostgreSQL's ``statement_timeout``, closed when the work
ends. Its result or its exception (a budget exceeded, a 404) comes back to the request.

One lane thread per process: heavy work of one process runs one at a time (a gunicorn sync worker
serves one request at a time anyway; under threaded workers, the heavy requests of a process
queue behind each other, their budgets running).

The work runs in the caller's thread instead when the lane is off (``CONTEXTLAB_HEAVY_NICE`` 0,
or not Linux), when the caller is inside a transaction (another connection would not see what it
has not committed: a test's transaction, ATOMIC_REQUESTS), and on the lane thread itself.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import connection, connections

from contextlab.budgets import statement_timeout_left
from contextlab.memory import one_heap

_lock = threading.Lock()
# This process's lane threads by nice value (one in production: the setting does not change
# while a process lives; tests change it), and the process they belong to.
_lanes: dict[int, ThreadPoolExecutor] = {}
_lanes_pid: int | None = None
_local = threading.local()


def lane_on() -> bool:
    """Whether heavy work moves to the lower-priority thread in this process."""
    return settings.CONTEXTLAB_HEAVY_NICE > 0 and sys.platform.startswith("linux")


def run[T](work: Callable[[], T]) -> T:
    """``work()``, done on this process's lower-priority thread when the lane is on (see the
    module doc); its result, or its exception raised here."""
    if not lane_on() or getattr(_local, "lane", False) or connection.in_atomic_block:
        return work()
    context = contextvars.copy_context()
    return _executor().submit(context.run, _in_lane, work).result()


def run_if[T](is_heavy: bool, work: Callable[[], T]) -> T:
    """``run(work)`` when ``is_heavy``, else ``work()`` here."""
    return run(work) if is_heavy else work()


def _executor() -> ThreadPoolExecutor:
    """This process's lane (made on first use: a worker forked from a preloaded master must not
    share its parent's, whose thread did not survive the fork)."""
    global _lanes_pid
    nice = settings.CONTEXTLAB_HEAVY_NICE
    with _lock:
        if _lanes_pid != os.getpid():
            _lanes.clear()
            _lanes_pid = os.getpid()
        if nice not in _lanes:
            one_heap()  # what the lane frees, the next request reuses (contextlab.memory)
            _lanes[nice] = ThreadPoolExecutor(
                max_workers=1,
                thread_name_prefix="contextlab-heavy",
                initializer=_lower_priority,
                initargs=(nice,),
            )
        return _lanes[nice]


def _lower_priority(nice: int) -> None:
    """The lane thread's nice value: ``nice`` above the process's own (19 at most). Where the
    system refuses (a sandbox without setpriority), the lane works at the process's priority."""
    _local.lane = True
    thread = threading.get_native_id()
    with contextlib.suppress(OSError):
        current = os.getpriority(os.PRIO_PROCESS, thread)
        os.setpriority(os.PRIO_PROCESS, thread, min(19, current + nice))


def _in_lane[T](work: Callable[[], T]) -> T:
    """``work()`` on the lane thread, under the request's remaining statement timeout, its
    connections closed afterwards (they live in this job's copy of the request's context)."""
    try:
        if connection.vendor == "postgresql":
            with connection.execute_wrapper(statement_timeout_left()):
                return work()
        return work()
    finally:
        connections.close_all()
