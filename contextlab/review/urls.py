from django.urls import path

from contextlab.review import views

app_name = "review"

urlpatterns = [
    path("projects/<int:pk>/members/", views.members, name="members"),
    path(
        "projects/<int:pk>/members/<int:membership_pk>/remove/",
        views.member_remove,
        name="member_remove",
    ),
    path("projects/<int:pk>/audit/", views.project_audit, name="project_audit"),
    path("sessions/<int:pk>/audit/", views.session_audit, name="session_audit"),
    path("audit/", views.audit, name="audit"),
]
