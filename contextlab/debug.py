"""Error reports that never show credentials."""

from __future__ import annotations

import re

from django.views.debug import SafeExceptionReporterFilter


class SafeReporterFilter(SafeExceptionReporterFilter):
    """Django's filter hides settings and request.META keys whose names contain KEY, SECRET,
    PASS, TOKEN...; connection URLs (DATABASE_URL, REDIS_URL, CELERY_BROKER_URL, the cache's
    LOCATION) carry passwords too, and runserver copies the environment into request.META."""

    hidden_settings = re.compile(
        "API|AUTH|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|URL|BROKER|LOCATION|DSN",
        flags=re.IGNORECASE,
    )
