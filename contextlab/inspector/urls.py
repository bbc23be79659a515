from django.urls import path

from contextlab.inspector import views

app_name = "inspector"

urlpatterns = [
    path("sessions/<int:pk>/", views.session_detail, name="session"),
    path("sessions/<int:pk>/rows/", views.tree_rows, name="tree_rows"),
    path("sessions/<int:pk>/not-sent/", views.not_sent, name="not_sent"),
    path("sessions/<int:pk>/message/", views.message, name="message"),
    path("sessions/<int:pk>/messages/", views.messages_page, name="messages"),
    path("sessions/<int:pk>/chart/", views.chart, name="chart"),
    path("sessions/<int:pk>/compare/", views.compare, name="compare"),
    path("sessions/<int:pk>/compare/entries/", views.compare_entries, name="compare_entries"),
    path("sessions/<int:pk>/request/", views.request_export, name="request"),
    path("sessions/<int:pk>/live/", views.live, name="live"),
    path("projects/<int:pk>/resources/", views.profile_update, name="profile"),
    # The session page by its Pi session id (the id the API and Pi use); after the numeric
    # routes, so a database number keeps naming the page it always did.
    path("sessions/<str:session_id>/", views.session_by_pi_id, name="session_by_pi_id"),
]
