from django.urls import path

from contextlab.jobs import views

app_name = "jobs"

urlpatterns = [
    path("sessions/<int:session_pk>/compact/", views.compact, name="compact"),
    path("sessions/<int:session_pk>/continue/", views.continue_from, name="continue"),
    path("sessions/<int:session_pk>/jobs/", views.job_list, name="list"),
    path("sessions/<int:session_pk>/export.jsonl", views.export, name="export"),
    path("sessions/<int:session_pk>/what-if/", views.what_if, name="what_if"),
    path("jobs/<int:pk>/", views.detail, name="detail"),
    path("jobs/<int:pk>/payload/<str:part>/", views.payload, name="payload"),
    path("jobs/<int:pk>/payload/<str:part>/<int:n>/", views.payload, name="payload"),
    path("jobs/<int:pk>/cancel/", views.cancel, name="cancel"),
    path("jobs/<int:pk>/retry/", views.retry, name="retry"),
]
