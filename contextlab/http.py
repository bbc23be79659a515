"""Request types for annotations: what middleware adds to Django's HttpRequest."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.http import HttpRequest

if TYPE_CHECKING:
    # Annotations only: importing the auth models needs the app registry ready.
    from django.contrib.auth.models import User
    from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """A view's request that reads `request.htmx`: every request passes
    django_htmx.middleware.HtmxMiddleware (settings.MIDDLEWARE), which sets it."""

    htmx: HtmxDetails


class AuthenticatedHttpRequest(HttpRequest):
    """The request of a `login_required` view: its user is signed in."""

    user: User
