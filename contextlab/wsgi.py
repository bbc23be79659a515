import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextlab.settings")
# The Celery app before any request: jobs and after-import work are queued on its broker.
from contextlab.celery import app as celery_app

application = get_wsgi_application()

__all__ = ("application", "celery_app")
