from django.apps import AppConfig


class SharingConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "contextlab.sharing"
    label = "sharing"
    verbose_name = "Share links"
