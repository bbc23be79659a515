from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("contextlab.jobs.urls")),
    path("", include("contextlab.inspector.urls")),
    path("", include("contextlab.library.urls")),
    path("", include("contextlab.review.urls")),
]
