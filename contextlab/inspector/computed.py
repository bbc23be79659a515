"""Computed views kept where every web process finds them, validated with ETags, and dropped
when their client is gone.

A session revision's entries never change. What the inspector computes from them depends only on
the revision, the entries asked for and the inputs from outside the session file (the project's
resource profile: the dialect it chooses, its agent dir, its files). So:

- a computation is kept in Django's cache (Redis in every deployment with a worker, shared by
  all web processes; per process otherwise) under (kind, session, revision, inputs, the request's
  own parameters): the first process computes it, every other process reuses it;
- a page built from it carries an ETag over the same key (and the user and their sign-in,
  whose CSRF secret its forms hold) and a Last-Modified, so a browser asking again gets a 304
  before anything is loaded or computed (Django's ``condition`` decorator);
- a long computation asks ``client_gone`` between steps and stops when nobody waits for it.

The resource files a Pi 0.x prompt is rebuilt from live on disk and may change without the
profile changing: kept computations expire after ``TIMEOUT`` seconds for that reason.
"""

from __future__ import annotations

import hashlib
import pickle
import socket
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.core.cache import cache
from django.http import HttpRequest

from contextlab.budgets import client_gone_socket
from contextlab.inspector.models import ResourceProfile
from contextlab.library.models import Session
from contextlab.library.selectors import session_for_user_or_404

# Bump when the shape of a kept computation changes: old entries are then never read.
VERSION = 1
TIMEOUT = 600
# A computation larger than this (pickled) is not kept: Redis is not a blob store, and a value
# that large costs about as much to fetch and unpickle as to compute.
MAX_BYTES = 4 * 1024 * 1024


def inputs_of(session: Session) -> tuple[str, datetime | None]:
    """What a computation depends on besides the session's revision (one query): the resource
    profile's last save. Kept on the session object: a request asks for it up to three times."""
    memo: tuple[str, datetime | None] | None = session.__dict__.get("_computed_inputs")
    if memo is not None:
        return memo
    row = (
        ResourceProfile.objects.filter(project_id=session.project_id)
        .values_list("pk", "updated_at")
        .first()
    )
    found: tuple[str, datetime | None] = ("none", None)
    if row is not None:
        found = (f"{row[0]}@{row[1].isoformat() if row[1] else ''}", row[1])
    session.__dict__["_computed_inputs"] = found
    return found


def session_version(session: Session) -> str:
    """The stored session as it is now: its revision, grown by any line appended since (the
    row's last change moves with it). The file's own session id comes first because primary
    keys are not unique across databases sharing one Redis (test runs, two deployments)."""
    changed = session.updated_at.timestamp() if session.updated_at else 0
    return (
        f"{session.session_id}/{session.current_revision_id}/{session.entry_count}"
        f"/{session.leaf_entry_id}/{changed}"
    )


def computed_key(kind: str, session: Session, *parts: Any) -> str:
    """The cache key of computation ``kind`` on this session as stored now with these
    parameters (and the project's inputs)."""
    inputs, _ = inputs_of(session)
    digest = hashlib.sha1(repr((session_version(session), inputs, parts)).encode()).hexdigest()
    return f"cl:computed:v{VERSION}:{kind}:{session.pk}:{digest}"


def kept[T](key: str, compute: Callable[[], T]) -> tuple[T, bool]:
    """The value kept under ``key``, else ``compute()`` kept there (when small enough); and
    whether it was found. Two processes that miss at once both compute: the result is the same
    and the second write is harmless, so no lock is held across a long computation."""
    hit = found(key)
    if hit is not None:
        return hit[0], True
    value = compute()
    keep(key, value)
    return value, False


def found(key: str) -> tuple[Any] | None:
    """The value kept under ``key`` (in a 1-tuple: a kept value may be None), else None."""
    blob = cache.get(key)
    if isinstance(blob, bytes):
        try:
            return (pickle.loads(blob),)  # our own cache, written by ``keep``
        except Exception:  # an entry an older version of this code wrote: computed again
            cache.delete(key)
    return None


def keep(key: str, value: Any) -> None:
    """Keep ``value`` under ``key`` for every web process, when small enough."""
    if _text_bytes(value) > MAX_BYTES:
        return  # not even pickled: a copy of a huge text is what must not happen
    blob = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    if len(blob) <= MAX_BYTES:
        cache.set(key, blob, TIMEOUT)


def _text_bytes(value: Any) -> int:
    """A lower bound of a value's pickled size from its texts (itself, or a tuple's items)."""
    items = value if isinstance(value, tuple) else (value,)
    return sum(len(item) for item in items if isinstance(item, str | bytes))


# --- conditional GET ---------------------------------------------------------------------------


def session_for(request: HttpRequest, pk: int) -> Session:
    """The session for this request's user (404 otherwise), loaded once per request: the ETag
    function and the view both need it."""
    memo: dict[int, Session] = request.__dict__.setdefault("_computed_sessions", {})
    if pk not in memo:
        memo[pk] = session_for_user_or_404(request.user, pk)
    return memo[pk]


def etag_of(request: HttpRequest, pk: int, kind: str, *names: str) -> str:
    """The ETag of page ``kind`` of session ``pk`` for these GET parameters: the computation's
    key, the user (pages name them) and their sign-in (a new one rotates the CSRF secret the
    pages' forms carry a token of, and the session key with it)."""
    session = session_for(request, pk)
    params = tuple(request.GET.get(name, "") for name in names)
    key = computed_key(kind, session, *params)
    signed_in = getattr(request, "session", None)
    who = f"{request.user.pk}:{signed_in.session_key if signed_in else ''}"
    return '"' + hashlib.sha1(f"{key}|{who}".encode()).hexdigest()[:24] + '"'


def last_modified_of(request: HttpRequest, pk: int) -> datetime | None:
    """The later of the session's last change and its project's profile's last save."""
    session = session_for(request, pk)
    _, profile_saved = inputs_of(session)
    stamps = [s for s in (session.updated_at, profile_saved) if s is not None]
    return max(stamps) if stamps else None


def conditional(kind: str, *names: str) -> dict[str, Callable[..., Any]]:
    """Keyword arguments for ``django.views.decorators.http.condition`` for page ``kind``
    whose content depends on the GET parameters ``names`` (and the session's revision)."""

    def etag(request: HttpRequest, pk: int) -> str:
        return etag_of(request, pk, kind, *names)

    def last_modified(request: HttpRequest, pk: int) -> datetime | None:
        return last_modified_of(request, pk)

    return {"etag_func": etag, "last_modified_func": last_modified}


# --- work whose client is gone --------------------------------------------------------------


def client_gone(request: HttpRequest) -> bool:
    """Whether the client closed its connection (it aborted the request: a newer click, a held
    key, a closed tab). Gunicorn hands the client's socket to the application
    (``gunicorn.socket``); under a server that does not (runserver, the test client) this is
    always False."""
    sock = request.META.get("gunicorn.socket")
    return isinstance(sock, socket.socket) and client_gone_socket(sock)
