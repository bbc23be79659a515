"""A web process gives the heap a request freed back to the system once the response is sent
(contextlab.memory), so that one large page does not keep a worker large for the rest of its
life."""

from __future__ import annotations

import gc

import pytest

from contextlab import memory

pytestmark = pytest.mark.skipif(
    memory._malloc_trim() is None or not memory.resident_bytes(),
    reason="needs glibc's malloc_trim and /proc",
)

MB = 1024 * 1024


def _fragmented_garbage(megabytes: int) -> list[bytes]:
    """Allocate `megabytes` in 2 KB blocks (malloc's heap, not CPython's arenas, not mmap) and
    free all but every 64th: the heap cannot shrink from its top, only malloc_trim gives the
    free pages inside it back. Returns the survivors (keep them alive)."""
    blocks = [bytes(2048) for _ in range(megabytes * 512)]
    survivors = blocks[::64]
    del blocks
    return survivors


def test_a_process_that_grew_gives_its_free_heap_back_after_the_response(client, settings):
    settings.CONTEXTLAB_TRIM_ABOVE_BYTES = 32 * MB
    memory.give_back()
    memory.trim_if_grown()  # the floor: what this process holds now
    survivors = _fragmented_garbage(200)
    grown = memory.resident_bytes()

    response = client.get("/accounts/login/")  # any response: request_finished follows it

    assert response.status_code == 200
    after = memory.resident_bytes()
    assert grown - after > 100 * MB, (grown // MB, after // MB)
    assert survivors  # still alive: what was given back is only what had been freed


def test_a_request_s_garbage_held_in_cycles_is_collected_and_given_back(client, settings):
    """A page's objects form reference cycles (Django's template contexts do), which only the
    cyclic collector frees, and the inspector builds a turn with the collector paused: a deep
    turn's whole projection outlived its request, and the next deep turn came on top of it."""
    settings.CONTEXTLAB_TRIM_ABOVE_BYTES = 32 * MB
    memory.give_back()
    memory.trim_if_grown()
    gc.disable()  # as while a turn is built: nothing collects these cycles by itself
    try:
        cycle: dict[str, object] = {"blocks": [bytes(2048) for _ in range(200 * 512)]}
        cycle["self"] = cycle
        del cycle
        grown = memory.resident_bytes()

        response = client.get("/accounts/login/")

        after = memory.resident_bytes()
    finally:
        gc.enable()
    assert response.status_code == 200
    assert grown - after > 150 * MB, (grown // MB, after // MB)


def test_a_process_that_did_not_grow_past_the_threshold_does_not_trim(settings):
    settings.CONTEXTLAB_TRIM_ABOVE_BYTES = 512 * MB
    memory.give_back()
    memory.trim_if_grown()
    survivors = _fragmented_garbage(50)

    assert memory.trim_if_grown() is False
    assert survivors


def test_a_threshold_of_zero_turns_trimming_off(settings):
    settings.CONTEXTLAB_TRIM_ABOVE_BYTES = 0
    memory._floor = 0

    assert memory.trim_if_grown() is False
