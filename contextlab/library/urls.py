from django.urls import path

from contextlab.library import views

app_name = "library"

urlpatterns = [
    path("", views.index, name="index"),
    path("search/", views.search, name="search"),
    path("upload/", views.upload, name="upload"),
]
