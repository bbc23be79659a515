from django.urls import path

from contextlab.library import views

app_name = "library"

urlpatterns = [
    path("", views.index, name="index"),
    path("search/", views.search, name="search"),
    path("upload/", views.upload, name="upload"),
    path("sessions/<int:pk>/history/", views.history, name="history"),
    path("unusable/<int:pk>/original.jsonl", views.unusable_original, name="unusable_original"),
    path(
        "sessions/<int:pk>/revisions/<int:number>/original.jsonl",
        views.original,
        name="original",
    ),
]
