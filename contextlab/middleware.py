"""Request checks that apply to every view."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

NUL_MESSAGE = (
    "This request holds a NUL character (\\0), which contextlab cannot store or search for."
    " Remove it and try again."
)

# Where the REST API is mounted (contextlab/urls.py): its answers are JSON, never a page.
API_PREFIX = "/api/"


class RejectNulMiddleware:
    """Answer 400, with a clear message, to a request whose path, query or form fields hold a
    NUL character. PostgreSQL text cannot hold NUL, so otherwise every view that stores or
    looks up a field (search, comments, labels, members, job forms) would fail with a 500.
    The API (paths under /api/) gets the same message as its JSON error object, as its schema
    documents for every 400. Uploaded files are not fields: the import handles NUL inside
    them line by line. Multipart bodies are checked too (any client may post one to any
    form); reading request.POST here parses nothing a view could still choose upload
    handlers for: the CSRF check reads request.POST before any view as well."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if _holds_nul(request):
            if request.path.startswith(API_PREFIX):
                return JsonResponse({"detail": NUL_MESSAGE}, status=400)
            body = render_to_string("400.html", {"message": NUL_MESSAGE}, request=request)
            return HttpResponse(body, status=400)
        return self.get_response(request)


def _holds_nul(request: HttpRequest) -> bool:
    if "\x00" in request.path:
        return True
    fields = [request.GET]
    if request.method == "POST":
        fields.append(request.POST)
    return any(
        "\x00" in key or any("\x00" in value for value in values)
        for query in fields
        for key, values in query.lists()
    )
