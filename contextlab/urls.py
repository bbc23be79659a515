from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import FileResponse, HttpRequest, HttpResponse
from django.middleware import csrf
from django.shortcuts import render
from django.urls import include, path
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe

from contextlab.api import views as api_views
from contextlab.api.api import api

handler400 = api_views.bad_request


@require_safe
@cache_control(max_age=86400, public=True)
def favicon(request: HttpRequest) -> FileResponse:
    """Browsers ask for /favicon.ico whatever the page's <link rel=icon> says."""
    return FileResponse(
        (settings.BASE_DIR / "static" / "favicon.ico").open("rb"), content_type="image/x-icon"
    )


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """A form refused by the CSRF check (settings.CSRF_FAILURE_VIEW), inside the site layout."""
    context = {"reason": reason, "no_cookie": reason == csrf.REASON_NO_CSRF_COOKIE}
    return render(request, "403_csrf.html", context, status=403)


# Django's auth views, except password reset unless mail can be sent (EMAIL_HOST): a reset
# form that can never deliver its link only tells visitors which addresses have accounts.
accounts = [
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password_change/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path(
        "password_change/done/",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
]
if settings.CONTEXTLAB_PASSWORD_RESET:
    accounts += [
        path("password_reset/", auth_views.PasswordResetView.as_view(), name="password_reset"),
        path(
            "password_reset/done/",
            auth_views.PasswordResetDoneView.as_view(),
            name="password_reset_done",
        ),
        path(
            "reset/<uidb64>/<token>/",
            auth_views.PasswordResetConfirmView.as_view(),
            name="password_reset_confirm",
        ),
        path(
            "reset/done/",
            auth_views.PasswordResetCompleteView.as_view(),
            name="password_reset_complete",
        ),
    ]

urlpatterns = [
    path("favicon.ico", favicon),
    path("admin/", admin.site.urls),
    path("accounts/", include(accounts)),
    path("api/v1/", api.urls),
    path("", include("contextlab.api.urls")),
    path("", include("contextlab.sharing.urls")),
    path("", include("contextlab.jobs.urls")),
    path("", include("contextlab.inspector.urls")),
    path("", include("contextlab.library.urls")),
    path("", include("contextlab.review.urls")),
]
