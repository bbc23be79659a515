from django.urls import path

from contextlab.api import views

app_name = "api"

urlpatterns = [
    path("account/api-tokens/", views.tokens, name="tokens"),
    path("account/api-tokens/<int:pk>/revoke/", views.token_revoke, name="token_revoke"),
]
