"""The WSGI application, made ready to serve before gunicorn forks its workers.

gunicorn loads this module once in its master (``preload_app`` in gunicorn.conf.py) and forks
each worker from it, so what is imported and compiled here is shared by every worker and by
each worker that replaces a recycled one (``max_requests``): the URLconf with every view and the
REST API's schema, and every template. Measured: a worker that imported and compiled these
itself spent about 2.7 s of CPU on them (1 s the settings and apps, 1 s the URLconf, 0.7 s its
first pages), a few percent of two cores under the load test's adversaries, where workers are
replaced every minute or two. Nothing here opens a database or Redis connection: a connection
made before the fork would be one socket shared by every worker.
"""

import os
from pathlib import Path

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextlab.settings")
# The Celery app before any request: jobs and after-import work are queued on its broker.
from contextlab.celery import app as celery_app

application = get_wsgi_application()


def warm() -> None:
    """Import every view (by resolving the URLconf) and compile every template of the project
    into the engines' cached loaders."""
    from django.conf import settings
    from django.template import engines
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 (imports every view module)
    root = Path(settings.BASE_DIR) / "templates"
    for engine, folder in (("django", root), ("jinja2", root / "jinja2")):
        for path in sorted(folder.rglob("*.html")):
            name = path.relative_to(folder).as_posix()
            if engine == "django" and name.startswith("jinja2/"):
                continue
            engines[engine].get_template(name)


warm()

__all__ = ("application", "celery_app")
