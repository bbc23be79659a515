"""contextlab: inspect the context of Pi coding-agent sessions."""

from contextlab.celery import app as celery_app

__all__ = ("celery_app",)
