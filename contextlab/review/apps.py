from django.apps import AppConfig


class ReviewConfig(AppConfig):
    """Team review: project membership (who sees what), comments on entries, review labels on
    sessions, and the audit log of who triggered what."""

    name = "contextlab.review"
    label = "review"
