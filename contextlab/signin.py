"""Sign-in that cannot be turned against users.

Every sign-in attempt costs a password hash (Django hashes even for a username that does not
exist, so that timing tells nothing): a few clients posting random usernames would keep the
CPUs busy and slow every other user's pages. So sign-in posts are counted per client address
and in total, in the cache shared by every web process, and refused with a 429 BEFORE the form
is read or any password hashed:

- CONTEXTLAB_LOGIN_ATTEMPTS_PER_ADDRESS_PER_MINUTE from one client address;
- CONTEXTLAB_LOGIN_ATTEMPTS_PER_MINUTE from everyone together (bounds the CPU spent hashing
  whatever the number of addresses).

A lockout after wrong passwords (django-axes) is per (username, client address), never per
username alone: a stranger cannot lock a user out from the user's own address. The client
address is the connection's (REMOTE_ADDR); X-Forwarded-For is believed only when the connection
comes from a proxy listed in CONTEXTLAB_TRUSTED_PROXIES, and then read from the right, past
the trusted proxies (entries further left were written by the client and prove nothing).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from functools import lru_cache

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import reverse

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# The counters' window: a fixed minute that starts at the first attempt counted in it.
WINDOW_SECONDS = 60


@lru_cache(maxsize=8)
def _trusted(values: tuple[str, ...]) -> tuple[Network, ...]:
    # Checked when the settings load (ImproperlyConfigured on a malformed one).
    return tuple(ipaddress.ip_network(value, strict=False) for value in values)


def _is_trusted(address: str, proxies: tuple[Network, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in proxies)


def client_address(request: HttpRequest) -> str:
    """The address of the client that made this request (also django-axes' address)."""
    remote = request.META.get("REMOTE_ADDR", "") or ""
    proxies = _trusted(tuple(settings.CONTEXTLAB_TRUSTED_PROXIES))
    if not proxies or not _is_trusted(remote, proxies):
        return remote
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
    address = remote
    for hop in reversed(hops):
        try:
            ipaddress.ip_address(hop)
        except ValueError:
            break  # garbage written by someone: the last trusted hop is all we know
        address = hop
        if not _is_trusted(hop, proxies):
            break
    return address


def _over(key: str, limit: int) -> bool:
    """Count one attempt under `key`; whether the window already held `limit` attempts."""
    if limit <= 0:
        return False
    cache.add(key, 0, timeout=WINDOW_SECONDS)
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=WINDOW_SECONDS)
        count = 1
    return count > limit


def attempt_refused(request: HttpRequest) -> str | None:
    """Count a sign-in attempt; why it is refused, if it is (before any password is hashed)."""
    address = client_address(request)
    if _over(
        f"signin:address:{address}", settings.CONTEXTLAB_LOGIN_ATTEMPTS_PER_ADDRESS_PER_MINUTE
    ):
        return "Too many sign-in attempts from your address. Wait a minute and try again."
    if _over("signin:all", settings.CONTEXTLAB_LOGIN_ATTEMPTS_PER_MINUTE):
        return "Too many sign-in attempts right now. Wait a minute and try again."
    return None


@lru_cache(maxsize=1)
def _signin_paths() -> frozenset[str]:
    return frozenset({reverse("login"), reverse("admin:login")})


class SignInThrottleMiddleware:
    """Refuse a sign-in post over the per-address or global limit with a 429 page, before the
    login view reads the form (and so before django-axes or any password hasher runs)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method == "POST" and request.path in _signin_paths():
            reason = attempt_refused(request)
            if reason is not None:
                body = render_to_string(
                    "registration/throttled.html", {"reason": reason}, request=request
                )
                response = HttpResponse(body, status=429)
                response["Retry-After"] = str(WINDOW_SECONDS)
                return response
        return self.get_response(request)
