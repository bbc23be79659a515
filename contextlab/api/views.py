"""The API tokens page: create (the token is shown once), list and revoke your tokens."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.shortcuts import get_object_or_404, redirect, render
from django.views import defaults
from django.views.decorators.http import require_POST

from contextlab.api.models import ApiToken
from contextlab.api.services import api_token_create, api_token_revoke
from contextlab.http import AuthenticatedHttpRequest


@login_required
def tokens(request: AuthenticatedHttpRequest) -> HttpResponse:
    """GET: your tokens. POST: a new token, shown on this answer only (never stored)."""
    new_token = ""
    if request.method == "POST":
        _, new_token = api_token_create(user=request.user, name=request.POST.get("name", ""))
    context = {
        "tokens": ApiToken.objects.filter(user=request.user),
        "new_token": new_token,
        "nav": "tokens",
    }
    response = render(request, "api/tokens.html", context)
    if new_token:
        response["Cache-Control"] = "no-store"  # the page holds a secret
    return response


@login_required
@require_POST
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    # Only your own tokens: another user's token id is 404.
    token = get_object_or_404(ApiToken, pk=pk, user=request.user)
    if api_token_revoke(token=token, actor=request.user):
        messages.success(request, f"Token {token.prefix}… revoked.")
    return redirect("api:tokens")


def not_found(request: HttpRequest, rest: str = "") -> JsonResponse:
    """Any other path under /api/: a JSON 404, as the API's own, for programs reading it."""
    return JsonResponse({"detail": "Not Found"}, status=404)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """The project's handler400. Under /api/ a JSON error object, as the API's schema documents
    for every 400 (a malformed multipart body fails before the API sees the request, when a
    middleware first reads request.POST); elsewhere the site's 400 page."""
    if not request.path.startswith("/api/"):
        return defaults.bad_request(request, exception)
    if isinstance(exception, MultiPartParserError):
        detail = "Unable to parse the request body (malformed multipart data)"
    else:
        detail = "Bad request: the request could not be understood"
    return JsonResponse({"detail": detail}, status=400)
