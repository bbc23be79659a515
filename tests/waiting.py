"""Bounded polling for tests that wait on another thread, process or server."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until[T](
    predicate: Callable[[], T],
    timeout: float = 60.0,
    what: str = "a condition",
    interval: float = 0.05,
) -> T:
    """Call `predicate` until it returns something true and return that; AssertionError naming
    `what` if `timeout` seconds pass first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")
