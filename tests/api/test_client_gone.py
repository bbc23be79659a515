"""Work whose client is gone is dropped (contextlab.budgets): a reading request whose client left
before a worker took it up is answered 499 without running its view, one that computes stops at
its next deadline check once the client leaves, and a writing request always runs to its end.
The last test holds a real gunicorn worker busy while 30 clients queue a page and leave, as a
held `j` key's aborted requests do."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

import pytest
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory
from django.urls import reverse

from contextlab import budgets
from tests.gunicorn import Gunicorn


def _middleware(view: Callable[[HttpRequest], HttpResponse]) -> budgets.RequestBudgetMiddleware:
    return budgets.RequestBudgetMiddleware(view)


def test_a_reading_request_whose_client_left_is_answered_499_without_its_view(client_socket_pair):
    ours, theirs = client_socket_pair
    ran = []
    theirs.close()
    request = RequestFactory().get("/sessions/1/", **{"gunicorn.socket": ours})
    response = _middleware(lambda r: ran.append(r) or HttpResponse("page"))(request)
    assert response.status_code == 499
    assert response.reason_phrase == "Client Closed Request"
    assert ran == []


def test_a_request_whose_client_is_still_there_runs(client_socket_pair):
    ours, _theirs = client_socket_pair
    request = RequestFactory().get("/sessions/1/", **{"gunicorn.socket": ours})
    response = _middleware(lambda r: HttpResponse("page"))(request)
    assert response.status_code == 200


def test_a_computing_request_stops_at_its_next_check_once_its_client_leaves(client_socket_pair):
    ours, theirs = client_socket_pair
    steps = []

    def view(request: HttpRequest) -> HttpResponse:
        for step in range(10_000):
            steps.append(step)
            if step == 3:
                theirs.close()  # the browser moved on (the next key, a closed tab)
            budgets.check_deadline()
            time.sleep(0.01)
        return HttpResponse("done")

    middleware = _middleware(view)
    request = RequestFactory().get("/sessions/1/", **{"gunicorn.socket": ours})
    try:
        response = middleware(request)
    except budgets.ClientGone as gone:
        response = middleware.process_exception(request, gone)
    assert response is not None and response.status_code == 499
    # Asked at most every CLIENT_CHECK_SECONDS (10 ms steps): it stopped within a few steps.
    assert 4 <= len(steps) <= 4 + 2 * int(budgets.CLIENT_CHECK_SECONDS / 0.01) + 2


def test_a_writing_request_runs_to_its_end_even_if_its_client_left(client_socket_pair):
    ours, theirs = client_socket_pair
    stored = []
    theirs.close()  # a Pi that sent its lines and exited
    request = RequestFactory().post(
        "/api/v1/sessions/x/lines",
        data=b"{}",
        content_type="application/json",
        **{"gunicorn.socket": ours},
    )

    def view(r: HttpRequest) -> HttpResponse:
        budgets.check_deadline()
        stored.append(r.body)
        return HttpResponse(status=201)

    assert _middleware(view)(request).status_code == 201
    assert stored == [b"{}"]


def test_an_api_request_whose_client_leaves_while_it_computes_is_answered_as_a_page_is():
    from contextlab.api.api import _past_budget

    request = RequestFactory().get("/api/v1/sessions/x/context")
    response = _past_budget(request, budgets.ClientGone())
    assert response.status_code == 499
    assert response.reason_phrase == "Client Closed Request"
    assert getattr(response, "_has_been_logged", False)  # not logged as a client error


def _queue_and_leave(port: int, path: str, cookie: str) -> None:
    """A request sent whole, then the connection closed at once (a browser's aborted fetch)."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: {cookie}\r\n"
            "HX-Request: true\r\nHX-Target: inspector\r\n\r\n".encode()
        )


@pytest.mark.django_db(transaction=True)
def test_requests_abandoned_in_the_listen_queue_cost_the_worker_nothing(
    tmp_path, owner_client, team_session
):
    server = Gunicorn(tmp_path / "gunicorn.log", "--access-logfile", "-", "--timeout", "60")
    server.start()
    try:
        cookie = "; ".join(f"{k}={v.value}" for k, v in owner_client.cookies.items())
        base = reverse("inspector:session", args=[team_session.pk])
        # The one worker is held: a client sends half a request and waits.
        slow = socket.create_connection(("127.0.0.1", server.port))
        slow.sendall(b"GET /api/v1/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        time.sleep(0.5)
        paths = [f"{base}?entry=abandoned{n}&tab=context" for n in range(30)]
        for path in paths:
            _queue_and_leave(server.port, path, cookie)
        slow.sendall(b"Connection: close\r\n\r\n")
        slow.recv(65536)
        slow.close()
        started = time.monotonic()
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(
                f"GET {base} HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: {cookie}\r\n"
                "Connection: close\r\n\r\n".encode()
            )
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 200"), answer[:300]
        assert time.monotonic() - started < 30
        log = server.log.read_text()
        for path in paths:
            # Each abandoned request was answered 499 (an unknown entry would have been a 404:
            # the view never ran).
            line = next(line for line in log.splitlines() if f"{path} HTTP" in line)
            assert '" 499 ' in line, line
    finally:
        server.stop()


@pytest.mark.django_db
def test_a_turn_whose_client_left_stops_reading_its_entries_at_the_next_part(
    client_socket_pair, monkeypatch, team_session
):
    """A deep turn's path is read part by part (tens of MB on a large session): once its client
    has left (a held key's row passed by), the next part is not read."""
    from contextlab.inspector import selectors, services

    ours, theirs = client_socket_pair
    monkeypatch.setattr(selectors, "FETCH_PART", 2)
    monkeypatch.setattr(budgets, "CLIENT_CHECK_SECONDS", 0)
    selectors.clear_cache()
    index = selectors.session_index(team_session)
    leaf = team_session.leaf_entry_id
    assert len(index.path(leaf)) > 6
    reads = []
    real = selectors.json_texts

    def reading(*args, **kwargs):
        reads.append(args)
        theirs.close()  # the browser moved on while the first part was being read
        return real(*args, **kwargs)

    monkeypatch.setattr(selectors, "json_texts", reading)
    request = RequestFactory().get("/sessions/1/", **{"gunicorn.socket": ours})

    def view(request: HttpRequest) -> HttpResponse:
        services.inspect_entry(team_session, index, leaf)
        return HttpResponse("the whole turn")

    middleware = _middleware(view)
    with pytest.raises(budgets.ClientGone) as gone:
        middleware(request)
    response = middleware.process_exception(request, gone.value)
    assert response is not None and response.status_code == 499
    assert len(reads) == 1
