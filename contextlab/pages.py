"""Whole pages kept for every web process until what they show changes: the library, search
results, a session's page (whole, its tree, its turn inspector) and its growth chart.

These pages are read far more often than what they show changes, and each costs tens of
milliseconds of a web process's CPU (the ORM's queries, the templates): on a server whose cores
are busy, that is what every request queues behind. A page is kept (in Django's cache: Redis,
shared by every web process, wherever a worker runs) under

- the **changes mark**: the sum and highest id of `contextlab_changes`, a row that PostgreSQL
  triggers add, in the writer's own transaction, for every statement writing a table the pages
  show (see the migration ``library.0017_changes``). The mark is read before anything else: a
  change committed after it makes a new mark, so a page can be kept under a mark older than
  its contents, never newer;
- the **user** (pages show their name, their rights, their projects) and the **request**: its
  path with its query, and the htmx headers that choose the page or one of its parts;
- the **deployment**: this code's templates and modules (their sizes and times: a deploy makes
  new keys, and two versions running side by side during one never share pages) and the
  settings that shape pages (``CONTEXTLAB_*``, the time zone).

The CSRF tokens a page holds are cut out when it is kept and a fresh one (of the asking
browser's own secret) is put back when it is served, so the page of one user is valid in each
of their browsers. A page that shows a one-time message (after an upload) is neither kept nor
served from the cache, and neither is one asked for without a CSRF cookie (its forms would
carry a token of a secret nobody holds yet). Pages are also dropped after
``computed.TIMEOUT`` seconds: a Pi 0.x prompt is rebuilt from resource files that live on disk,
outside the database.

A repeat of a kept page is a 304 (its ETag: the key and the browser's CSRF cookie). Without
PostgreSQL (the embedded demo's SQLite) nothing is kept.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from functools import cache, wraps
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.signals import setting_changed
from django.db import connection
from django.http import HttpRequest, HttpResponse, HttpResponseNotModified
from django.middleware.csrf import get_token
from django.utils.cache import patch_cache_control
from django.utils.http import parse_etags

from contextlab.inspector import computed

VERSION = 1
# When the table holds more rows than this, the request that finds them folds them into one.
FOLD_ROWS = 1000
# The htmx request headers that choose what a URL answers (the page or one of its parts).
HTMX_HEADERS = ("HX-Request", "HX-Target", "HX-History-Restore-Request", "HX-Boosted")
# Where Django writes a CSRF token in our pages: the form field and the body's hx-headers.
TOKEN_AFTER = ('name="csrfmiddlewaretoken" value="', '"X-CSRFToken": "')
_TOKEN = re.compile(r'[A-Za-z0-9]{64}(?=")')


def cut_tokens(html: str) -> list[str]:
    """The page cut where Django wrote a token (64 letters and digits right after one of
    TOKEN_AFTER, before a quote), the tokens left out.

    Found with str.find, each mark's next place looked for again only once it is passed; one
    regular expression of look-behinds was tried at every character (11.6 ms for a 200 KB page,
    on every page kept)."""
    segments: list[str] = []
    start = 0
    after = {mark: html.find(mark) for mark in TOKEN_AFTER}
    while True:
        found = {mark: at for mark, at in after.items() if at >= 0}
        if not found:
            break
        mark = min(found, key=found.__getitem__)
        token = found[mark] + len(mark)
        if _TOKEN.match(html, token):
            segments.append(html[start:token])
            start = token + 64
        after[mark] = html.find(mark, token)
    segments.append(html[start:])
    return segments


def changes_mark() -> str | None:
    """What the watched tables have seen committed, as this transaction sees it: the sum of the
    changes' weights and the highest id (ids are never handed out twice, so a change rolled back
    and another made in its place still give a new mark). None without PostgreSQL."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(sum(weight), 0), count(*), coalesce(max(id), 0)"
            " FROM contextlab_changes"
        )
        total, rows, last = cursor.fetchone()
        if rows > FOLD_ROWS:
            _fold(cursor)
    return f"{total}.{last}"


def _fold(cursor: Any) -> None:
    """Replace the committed rows by one of their summed weight (the sum every reader sees is the
    same before and after); rows another request is folding are skipped, not waited for."""
    cursor.execute(
        "WITH gone AS (DELETE FROM contextlab_changes WHERE id IN"
        " (SELECT id FROM contextlab_changes FOR UPDATE SKIP LOCKED) RETURNING weight)"
        " INSERT INTO contextlab_changes (weight) SELECT sum(weight) FROM gone"
        " HAVING count(*) > 0"
    )


def page_key(request: HttpRequest, kind: str) -> str | None:
    """The key page ``kind`` is kept under for this request, or None when it is not kept."""
    if request.method != "GET" or not request.user.is_authenticated:
        return None
    if not request.COOKIES.get(settings.CSRF_COOKIE_NAME):
        return None
    if len(messages.get_messages(request)):  # counted, not read: they stay for the page
        return None
    mark = changes_mark()
    if mark is None:
        return None
    htmx = tuple(request.headers.get(name, "") for name in HTMX_HEADERS)
    user = (request.user.pk, request.user.get_username())
    parts = repr((mark, deployment(), user, request.get_full_path(), htmx))
    return f"cl:page:v{VERSION}:{kind}:{hashlib.sha1(parts.encode()).hexdigest()}"


def kept_page(kind: str) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """Keep the pages ``view`` answers (see the module's docstring)."""

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def kept_view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            key = page_key(request, kind)
            if key is None:
                return view(request, *args, **kwargs)
            etag = _etag(request, key)
            if etag in parse_etags(request.headers.get("If-None-Match", "")):
                return _revalidated(HttpResponseNotModified(), etag)
            hit = computed.found(key)
            if hit is not None:
                segments, headers = hit[0]
                response = HttpResponse(get_token(request).join(segments))
                for name, value in headers:
                    response[name] = value
                return _revalidated(response, etag)
            response = view(request, *args, **kwargs)
            if _keepable(response):
                html = response.content.decode(response.charset)
                headers = [(n, v) for n, v in response.items() if n.lower() != "etag"]
                computed.keep(key, (cut_tokens(html), headers))  # unless too large
                return _revalidated(response, etag)
            return response

        return kept_view

    return decorator


@cache
def deployment() -> str:
    """A digest of this code (every template and module under the project, by path, size and
    modification time) and of the settings pages depend on; made once per process (again when
    a test changes a setting)."""
    root = Path(__file__).resolve().parent.parent
    files = [*(root / "templates").rglob("*.html"), *(root / "contextlab").rglob("*.py")]
    stats = sorted(
        (str(f.relative_to(root)), f.stat().st_size, f.stat().st_mtime_ns) for f in files
    )
    shaping = [(k, getattr(settings, k)) for k in dir(settings) if k.startswith("CONTEXTLAB_")]
    shaping += [("TIME_ZONE", settings.TIME_ZONE), ("USE_TZ", settings.USE_TZ)]
    return hashlib.sha1(repr((stats, shaping)).encode()).hexdigest()


def _settings_changed(**kwargs: Any) -> None:
    deployment.cache_clear()


setting_changed.connect(_settings_changed)


def _keepable(response: HttpResponse) -> bool:
    return response.status_code == 200 and not response.streaming and not response.cookies


def _etag(request: HttpRequest, key: str) -> str:
    """The page's key and the browser's CSRF cookie (the secret its forms' tokens hold)."""
    secret = request.COOKIES.get(settings.CSRF_COOKIE_NAME, "")
    return '"' + hashlib.sha1(f"{key}|{secret}".encode()).hexdigest()[:24] + '"'


def _revalidated(response: HttpResponse, etag: str) -> HttpResponse:
    """A kept page is private and asked again each time (its ETag makes the repeat a 304)."""
    response["ETag"] = etag
    patch_cache_control(response, private=True, no_cache=True)
    return response
