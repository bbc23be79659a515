"""Heavy work runs at a lower CPU priority (contextlab.heavy): a large session's deep turn (and a
comparison of such turns) is built on a thread of nice CONTEXTLAB_HEAVY_NICE that sees the
request's budget, its client and a connection of its own, and gives back the same page, or the
same error, as a build in the request's own thread."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from django.db import connection, connections, transaction
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory
from django.urls import reverse

from contextlab import budgets, heavy
from contextlab.inspector import computed, services
from contextlab.inspector import views as inspector_views
from contextlab.inspector.selectors import session_index

HTMX_INSPECTOR = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "inspector"}


def _where() -> tuple[str, int]:
    """The calling thread's name and nice value."""
    return threading.current_thread().name, os.getpriority(
        os.PRIO_PROCESS, threading.get_native_id()
    )


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Where each inspection and comparison was built (thread, nice); nothing is read from the
    kept computations, so every request builds."""
    seen: list[tuple[str, int]] = []
    inspect, compare = services.inspect_entry, inspector_views.requests_compare

    def inspect_spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(_where())
        return inspect(*args, **kwargs)

    def compare_spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(_where())
        return compare(*args, **kwargs)

    monkeypatch.setattr(services, "inspect_entry", inspect_spy)
    monkeypatch.setattr(inspector_views, "requests_compare", compare_spy)
    monkeypatch.setattr(computed, "found", lambda key: None)
    return seen


def _masked(page: bytes) -> bytes:
    """A page without its forms' CSRF tokens (masked anew on every render)."""
    return re.sub(rb"[A-Za-z0-9_\-]{40,}", b"TOKEN", page)


def _turn(client: Any, session: Any, entry: str, tab: str = "context") -> bytes:
    url = reverse("inspector:session", args=[session.pk])
    response = client.get(f"{url}?entry={entry}&tab={tab}", **HTMX_INSPECTOR)
    assert response.status_code == 200
    return _masked(response.content)


@pytest.mark.django_db(transaction=True)
def test_a_heavy_turn_is_built_on_a_thread_of_lower_priority_into_the_same_page(
    owner_client, import_corpus, builds, settings
):
    session, _ = import_corpus("branches")
    index = session_index(session)
    entries = [i for i in index.order if index.items[i].type == "message"][-3:]
    settings.CONTEXTLAB_HEAVY_NICE = 0
    inline = {
        (e, tab): _turn(owner_client, session, e, tab)
        for e in entries
        for tab in ("context", "diff")
    }
    assert {name for name, _ in builds} == {threading.current_thread().name}
    builds.clear()
    settings.CONTEXTLAB_HEAVY_NICE = 7
    settings.CONTEXTLAB_HEAVY_TURN_TOKENS = 1  # every turn counts as heavy
    for (entry, tab), page in inline.items():
        assert _turn(owner_client, session, entry, tab) == page
    own_nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert builds == [("contextlab-heavy_0", min(19, own_nice + 7))] * len(inline)


@pytest.mark.django_db(transaction=True)
def test_an_ordinary_turn_is_built_in_the_requests_own_thread(
    owner_client, import_corpus, builds, settings
):
    session, _ = import_corpus("branches")
    index = session_index(session)
    settings.CONTEXTLAB_HEAVY_NICE = 10
    heaviest = max(sum(index.items[i].tokens for i in index.path(e)) for e in index.items)
    settings.CONTEXTLAB_HEAVY_TURN_TOKENS = heaviest + 1
    _turn(owner_client, session, index.leaf_id)
    assert builds == [_where()]


@pytest.mark.django_db(transaction=True)
def test_a_comparison_of_heavy_turns_is_made_on_the_lower_priority_thread(
    owner_client, import_corpus, builds, settings
):
    session, _ = import_corpus("branches")
    index = session_index(session)
    users = [i for i in index.order if index.items[i].role == "user"]
    url = reverse("inspector:compare", args=[session.pk])
    settings.CONTEXTLAB_HEAVY_NICE = 0
    inline = _masked(owner_client.get(f"{url}?a={users[-1]}&b={users[1]}").content)
    settings.CONTEXTLAB_HEAVY_NICE = 10
    settings.CONTEXTLAB_HEAVY_TURN_TOKENS = 1
    assert _masked(owner_client.get(f"{url}?a={users[-1]}&b={users[1]}").content) == inline
    assert builds[-1][0] == "contextlab-heavy_0"


@pytest.mark.django_db(transaction=True)
def test_a_heavy_build_past_its_budget_answers_503_and_the_next_request_is_served(
    owner_client, import_corpus, builds, settings
):
    session, _ = import_corpus("branches")
    settings.CONTEXTLAB_HEAVY_TURN_TOKENS = 1
    settings.CONTEXTLAB_REQUEST_BUDGETS = {**settings.CONTEXTLAB_REQUEST_BUDGETS, "page": 0}
    url = reverse("inspector:session", args=[session.pk])
    leaf = session_index(session).leaf_id
    response = owner_client.get(f"{url}?entry={leaf}", **HTMX_INSPECTOR)
    assert response.status_code == 503
    assert "took longer than this server allows" in response.content.decode()
    assert builds and builds[-1][0] == "contextlab-heavy_0"
    settings.CONTEXTLAB_REQUEST_BUDGETS = {**settings.CONTEXTLAB_REQUEST_BUDGETS, "page": 30}
    assert b'id="inspector"' in _turn(owner_client, session, leaf)


@pytest.mark.django_db(transaction=True)
def test_heavy_work_queries_under_the_requests_remaining_budget_on_a_connection_it_closes(
    settings,
):
    settings.CONTEXTLAB_HEAVY_NICE = 10
    token = budgets._deadline.set(time.monotonic() + 5)
    used: list[Any] = []

    def work() -> str:
        with connection.cursor() as cursor:
            cursor.execute("SHOW statement_timeout")
            used.append(connections["default"])
            return str(cursor.fetchone()[0])

    try:
        shown = heavy.run(work)
    finally:
        budgets._deadline.reset(token)
    assert shown.endswith("ms") or shown.endswith("s")
    milliseconds = int(shown[:-2]) if shown.endswith("ms") else int(shown[:-1]) * 1000
    assert 3000 < milliseconds <= 5000
    assert used[0] is not connections["default"]  # the thread's own connection...
    assert used[0].connection is None  # ...closed when the work ended
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == "0"  # the caller's connection untouched


@pytest.mark.django_db(transaction=True)
def test_heavy_work_inside_a_transaction_runs_in_the_callers_thread_and_sees_it(owner, settings):
    settings.CONTEXTLAB_HEAVY_NICE = 10
    from django.contrib.auth import get_user_model

    with transaction.atomic():
        get_user_model().objects.filter(pk=owner.pk).update(first_name="uncommitted")
        name, where = heavy.run(
            lambda: (get_user_model().objects.get(pk=owner.pk).first_name, _where())
        )
    assert name == "uncommitted"
    assert where == _where()


def test_an_error_of_heavy_work_is_raised_in_the_caller(settings):
    settings.CONTEXTLAB_HEAVY_NICE = 10

    def work() -> None:
        raise LookupError("from the lane")

    with pytest.raises(LookupError, match="from the lane"):
        heavy.run(work)
    assert heavy.run(_where)[0] == "contextlab-heavy_0"  # the lane lives on


def test_heavy_work_stops_when_its_client_leaves_and_the_request_is_answered_499(
    client_socket_pair, settings
):
    settings.CONTEXTLAB_HEAVY_NICE = 10
    ours, theirs = client_socket_pair
    steps: list[int] = []

    def work() -> None:
        for step in range(100_000):
            steps.append(step)
            if step == 3:
                theirs.close()  # the browser moved on
            budgets.check_deadline()
            time.sleep(0.01)

    def view(request: HttpRequest) -> HttpResponse:
        heavy.run(work)
        return HttpResponse("page")

    middleware = budgets.RequestBudgetMiddleware(view)
    request = RequestFactory().get("/sessions/1/", **{"gunicorn.socket": ours})
    try:
        response = middleware(request)
    except budgets.ClientGone as gone:  # raised in the lane, then here; Django's handler asks:
        answer = budgets.RequestBudgetMiddleware.process_exception(middleware, request, gone)
        assert answer is not None
        response = answer
    assert response.status_code == 499
    assert len(steps) < 20


@pytest.mark.django_db(transaction=True)
def test_every_other_builder_of_a_deep_turn_builds_it_on_the_lower_priority_thread(
    owner, owner_client, client, import_corpus, monkeypatch, settings
):
    """The collapsed messages' next page, a message body as a leaf holds it, the request export
    and the API's context build the turn too: on the lane when it is heavy."""
    from contextlab.api import services as api_services
    from contextlab.api.services import api_token_create

    session, _ = import_corpus("branches")
    index = session_index(session)
    leaf = index.leaf_id
    settings.CONTEXTLAB_HEAVY_NICE = 10
    settings.CONTEXTLAB_HEAVY_TURN_TOKENS = 1
    monkeypatch.setattr(computed, "found", lambda key: None)
    seen: dict[str, str] = {}

    def spy(module: Any, name: str) -> None:
        original = getattr(module, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            seen[name] = threading.current_thread().name
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, wrapper)

    spy(services, "middle_messages")
    spy(services, "message_blocks")
    spy(inspector_views, "provider_request")
    spy(api_services, "turn_context")
    token = api_token_create(user=owner)[1]
    answers = [
        owner_client.get(reverse("inspector:messages", args=[session.pk]), {"entry": leaf}),
        owner_client.get(
            reverse("inspector:message", args=[session.pk]),
            {"entry": index.path(leaf)[1], "leaf": leaf},
        ),
        owner_client.get(reverse("inspector:request", args=[session.pk]), {"entry": leaf}),
        client.get(
            f"/api/v1/sessions/{session.session_id}/context",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        ),
    ]
    assert [a.status_code for a in answers] == [200] * 4
    assert seen == dict.fromkeys(
        ["middle_messages", "message_blocks", "provider_request", "turn_context"],
        "contextlab-heavy_0",
    )


_HEAPS = """
import ctypes, os, sys, tempfile
import django
django.setup()
from contextlab import heavy
if sys.argv[1] == "without":
    heavy.one_heap = lambda: False
heavy.run(lambda: [bytearray(2000) for _ in range(5000)])  # freed on the lane
libc = ctypes.CDLL("libc.so.6")
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
handle, path = tempfile.mkstemp()
os.close(handle)
out = libc.fopen(path.encode(), b"w")
libc.malloc_info(0, out)
libc.fclose(out)
print(open(path).read().count("<heap nr="))
os.unlink(path)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_info")
def test_the_lane_thread_allocates_from_the_main_heap():
    """What a deep turn frees on the lane, the next request in the main thread reuses
    (contextlab.memory.one_heap: glibc's M_ARENA_MAX 1, set before the lane's thread starts):
    the process keeps one malloc heap; without it, the lane makes a second."""

    def heaps(mode: str) -> int:
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
        env["CONTEXTLAB_HEAVY_NICE"] = "10"
        done = subprocess.run(
            [sys.executable, "-c", _HEAPS, mode], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return int(done.stdout.split()[-1])

    assert heaps("with") == 1
    assert heaps("without") == 2
