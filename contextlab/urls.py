from django.conf import settings
from django.contrib import admin
from django.http import FileResponse, HttpRequest
from django.urls import include, path
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe

from contextlab.api.api import api


@require_safe
@cache_control(max_age=86400, public=True)
def favicon(request: HttpRequest) -> FileResponse:
    """Browsers ask for /favicon.ico whatever the page's <link rel=icon> says."""
    return FileResponse(
        (settings.BASE_DIR / "static" / "favicon.ico").open("rb"), content_type="image/x-icon"
    )


urlpatterns = [
    path("favicon.ico", favicon),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/v1/", api.urls),
    path("", include("contextlab.api.urls")),
    path("", include("contextlab.sharing.urls")),
    path("", include("contextlab.jobs.urls")),
    path("", include("contextlab.inspector.urls")),
    path("", include("contextlab.library.urls")),
    path("", include("contextlab.review.urls")),
]
