"""The request type of views that read `request.htmx` (django-htmx's middleware sets it)."""

from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """Only for annotations: every request passes django_htmx.middleware.HtmxMiddleware
    (settings.MIDDLEWARE), which sets `htmx`."""

    htmx: HtmxDetails
