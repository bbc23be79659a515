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
    path("sessions/<int:pk>/comments/", views.comment_create, name="comment_create"),
    path("comments/<int:pk>/delete/", views.comment_delete, name="comment_delete"),
    path("comments/<int:pk>/edit/", views.comment_edit, name="comment_edit"),
    path("sessions/<int:pk>/labels/", views.label_add, name="label_add"),
    path("sessions/<int:pk>/labels/remove/", views.label_remove, name="label_remove"),
]
