"""The API tokens page: create (the token is shown once), list and revoke your tokens."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from contextlab.api.models import ApiToken
from contextlab.api.services import api_token_create, api_token_revoke


@login_required
def tokens(request: HttpRequest) -> HttpResponse:
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
