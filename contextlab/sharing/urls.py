from django.urls import path

from contextlab.sharing import views

app_name = "sharing"

urlpatterns = [
    path("shares/", views.links, name="links"),
    path("shares/<int:pk>/revoke/", views.link_revoke, name="revoke"),
    path("s/<str:token>/", views.shared, name="shared"),
    path("s/<str:token>/message/", views.shared_message, name="message"),
]
