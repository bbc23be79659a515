from django.contrib import admin
from django.urls import include, path

from contextlab.api.api import api

urlpatterns = [
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
