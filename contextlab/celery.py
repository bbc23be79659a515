"""Celery bootstrap: configuration comes from Django settings (CELERY_* names)."""

import os
import sys

from celery import Celery
from celery.signals import celeryd_init

from contextlab.preflight import broker_problem

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextlab.settings")

app = Celery("contextlab")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@celeryd_init.connect
def _refuse_to_start_without_redis(**_: object) -> None:
    """Without REDIS_URL the broker is memory://, which no web process can send to: a worker
    started that way would wait for ever, silently. (Whether Redis answers is `make worker`'s
    check; a deployed worker started before its Redis waits for it.)"""
    problem = broker_problem(reach=False)
    if problem:
        sys.exit(f"celery worker: {problem}")
