"""A budget of time for every web request, so that no request can hold a worker until gunicorn
kills it (and every other user waits).

Two bounds, both set per kind of request (``request_kind``; seconds in
``CONTEXTLAB_REQUEST_BUDGETS``, each under gunicorn's timeout):

1. PostgreSQL's ``statement_timeout``: set on the request's connection before its first query
   (one ``SET`` through the raw cursor, so query counts stay the views' own) and reset when the
   response is done, so a query past the budget is cancelled by the server itself.
2. A deadline that long Python loops check with ``check_deadline()`` (a projection of thousands
   of messages, a diff, an export's rows): past it they raise ``BudgetExceeded``.

Either way the user gets a plain answer: a 503 page, or under /api/ the API's JSON error object
``{"detail": ...}``; the worker lives on. A streamed answer (an export, ``/context``) keeps its
budget while it streams; past it the stream stops (its status is already sent).

3. Work whose client is gone is dropped. A reading request (GET, HEAD) whose client closed its
   connection before a worker took it up (a held key's aborted requests wait in the listen
   queue; a closed tab) is answered 499 at once, and ``check_deadline()`` asks again (at most
   every ``CLIENT_CHECK_SECONDS``) while the request computes, so an abandoned render stops at
   its next step. Gunicorn hands the application its client's socket (``gunicorn.socket``);
   under a server that does not, nothing is dropped. A writing request (a push of lines, an
   upload) always runs to its end: what the client sent is stored even if it left.
"""

from __future__ import annotations

import contextlib
import re
import select
import socket
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.utils import OperationalError
from django.http import (
    FileResponse,
    HttpRequest,
    HttpResponse,
    JsonResponse,
    StreamingHttpResponse,
)
from django.template.loader import render_to_string

__all__ = [
    "BudgetExceeded",
    "ClientGone",
    "RequestBudgetMiddleware",
    "check_deadline",
    "client_gone_socket",
    "request_kind",
    "statement_timeout_left",
]

# (method or "*", path pattern, kind): the first match decides; anything else is a "page".
KINDS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("POST", re.compile(r"^/api/v1/sessions/[^/]+/lines$"), "upload"),
    ("POST", re.compile(r"^/(upload|sessions/upload)/?$"), "upload"),
    ("*", re.compile(r"^/api/v1/sessions/[^/]+/(export|context)$"), "export"),
    ("*", re.compile(r"^/sessions/\d+/(export\.jsonl|request/)$"), "export"),
    ("*", re.compile(r"^/api/"), "api"),
)

_deadline: ContextVar[float | None] = ContextVar("contextlab_request_deadline", default=None)
# The client's socket of a reading request, and when it was last asked whether it is still there.
_client: ContextVar[_Client | None] = ContextVar("contextlab_request_client", default=None)
# How often a computing request asks whether its client is still there (one select() each).
CLIENT_CHECK_SECONDS = 0.05
# The status nginx gave this: the client closed the connection before the answer (not sent).
CLIENT_CLOSED = 499


class BudgetExceeded(Exception):
    """A request went past its budget (``status``: 503, or 413 for what is too large)."""

    def __init__(self, message: str, status: int = 503) -> None:
        super().__init__(message)
        self.status = status


def client_closed() -> HttpResponse:
    """The answer to a client that has gone: nobody reads it. Not logged as a client error
    (a held key leaves dozens of them; they are no one's mistake)."""
    response = HttpResponse(status=CLIENT_CLOSED, reason="Client Closed Request")
    response._has_been_logged = True  # type: ignore[attr-defined]  # django.utils.log's flag
    return response


class ClientGone(BudgetExceeded):
    """The client of the current request closed its connection: nobody waits for the answer."""

    def __init__(self) -> None:
        super().__init__("The client closed the connection.", status=CLIENT_CLOSED)


class _Client:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.asked = time.monotonic()


def client_gone_socket(sock: socket.socket) -> bool:
    """A socket that is readable but yields no byte was closed by its peer (a readable socket
    with bytes waiting is a client sending its next request: still there)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        if not readable:
            return False
        return sock.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


def _reading_client(request: HttpRequest) -> socket.socket | None:
    sock = request.META.get("gunicorn.socket")
    if request.method in ("GET", "HEAD") and isinstance(sock, socket.socket):
        return sock
    return None


def request_kind(request: HttpRequest) -> str:
    for method, pattern, kind in KINDS:
        if (method == "*" or request.method == method) and pattern.match(request.path_info):
            return kind
    return "page"


def budget_seconds(kind: str) -> float:
    budgets: Mapping[str, float] = settings.CONTEXTLAB_REQUEST_BUDGETS
    return float(budgets.get(kind, budgets["page"]))


def check_deadline(what: str = "This request") -> None:
    """Raise BudgetExceeded when the current request is past its deadline (no-op outside a
    request, e.g. in a worker or a command)."""
    deadline = _deadline.get()
    if deadline is None:
        return
    now = time.monotonic()
    client = _client.get()
    if client is not None and now - client.asked >= CLIENT_CHECK_SECONDS:
        client.asked = now
        if client_gone_socket(client.sock):
            raise ClientGone
    if now > deadline:
        raise BudgetExceeded(
            f"{what} took longer than this server allows for one request; nothing was changed."
            " Try a smaller part (an earlier entry, a shorter range) or ask an administrator."
        )


def _query_cancelled(exc: BaseException) -> bool:
    """PostgreSQL cancelled a statement: statement_timeout (SQLSTATE 57014)."""
    if not isinstance(exc, OperationalError):
        return False
    cause = exc.__cause__
    return getattr(cause, "sqlstate", None) == "57014"


def is_budget_error(exc: BaseException) -> bool:
    return isinstance(exc, BudgetExceeded) or _query_cancelled(exc)


def budget_response(request: HttpRequest, exc: BaseException) -> HttpResponse:
    """The plain answer to a request past its budget."""
    if isinstance(exc, BudgetExceeded):
        message, status = str(exc), exc.status
    else:
        message = (
            "A database query of this request took longer than this server allows for one"
            " request, and was stopped; nothing was changed. Try again later or a smaller part."
        )
        status = 503
    if request.path_info.startswith("/api/"):
        response: HttpResponse = JsonResponse({"detail": message}, status=status)
    else:
        title = "Too large" if status == 413 else "Too long for one request"
        body = render_to_string("503.html", {"message": message, "title": title}, request=request)
        response = HttpResponse(body, status=status)
    if status == 503:
        response["Retry-After"] = "30"
    return response


class _StatementTimeout:
    """Django's execute wrapper: ``SET statement_timeout`` before the request's first query
    (on the raw cursor, unseen by query logging and counts)."""

    def __init__(self, milliseconds: int) -> None:
        self.milliseconds = milliseconds
        self.raw: Any = None  # the DB-API connection it was set on

    def __call__(
        self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        raw = context["connection"].connection
        if self.raw is not raw:
            context["cursor"].cursor.execute(f"SET statement_timeout = {self.milliseconds}")
            self.raw = raw
        return execute(sql, params, many, context)

    def reset(self) -> None:
        """Back to the server's default, for whatever runs next on this connection (another
        request of another kind sets its own; a command or a test runs unbounded)."""
        raw, self.raw = self.raw, None
        if raw is None or raw is not connection.connection:
            return
        # A broken or aborted connection is dropped or rolled back by Django anyway.
        with contextlib.suppress(Exception):
            raw.execute("RESET statement_timeout")


def statement_timeout_left() -> _StatementTimeout:
    """An execute wrapper giving another connection (a thread doing the request's work, see
    ``contextlab.heavy``) what is left of the current request's budget as its
    ``statement_timeout`` (1 ms at least; outside a request, none: 0)."""
    deadline = _deadline.get()
    if deadline is None:
        return _StatementTimeout(0)
    return _StatementTimeout(max(1, int((deadline - time.monotonic()) * 1000)))


class RequestBudgetMiddleware:
    """Gives every request its kind's budget (see the module doc) and answers plainly past it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        sock = _reading_client(request)
        if sock is not None and client_gone_socket(sock):
            # Waited in the listen queue for a client that has left: no work, no answer read.
            return client_closed()
        seconds = budget_seconds(request_kind(request))
        deadline = time.monotonic() + seconds
        timeout = _StatementTimeout(int(seconds * 1000))
        token = _deadline.set(deadline)
        client_token = _client.set(_Client(sock) if sock is not None else None)
        postgres = connection.vendor == "postgresql"
        try:
            if postgres:
                with connection.execute_wrapper(timeout):
                    response = self.get_response(request)
            else:
                response = self.get_response(request)
        except BaseException:
            timeout.reset()
            raise
        finally:
            _deadline.reset(token)
            _client.reset(client_token)
        # A file (static, a blob) streams without queries or loops: left as it is.
        if isinstance(response, StreamingHttpResponse) and not isinstance(response, FileResponse):
            response.streaming_content = _budgeted(
                response.streaming_content, deadline, timeout if postgres else None
            )
        else:
            timeout.reset()
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, ClientGone):
            return client_closed()
        if is_budget_error(exception):
            return budget_response(request, exception)
        return None


def _budgeted(
    chunks: Iterable[bytes], deadline: float, timeout: _StatementTimeout | None
) -> Iterator[bytes]:
    """A streamed answer's chunks, produced under the request's deadline and statement timeout
    (a streamed body is made after the view returned). Past the budget the stream ends early."""
    iterator = iter(chunks)
    try:
        while True:
            token = _deadline.set(deadline)
            try:
                if timeout is not None:
                    with connection.execute_wrapper(timeout):
                        chunk = next(iterator)
                else:
                    chunk = next(iterator)
            except StopIteration:
                return
            except Exception as exc:
                if is_budget_error(exc):
                    return  # the status is sent: the answer stops short, the worker lives on
                raise
            finally:
                _deadline.reset(token)
            yield chunk
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            close()
        if timeout is not None:
            timeout.reset()
