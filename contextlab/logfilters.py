"""Logging filters referenced from settings.LOGGING."""

from __future__ import annotations

import logging


class ForbiddenWithoutTraceback(logging.Filter):
    """A 403 is an answer, not a fault: Django logs "Forbidden (Permission denied)" with the
    exception's traceback; keep the one warning line and drop the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) == 403:
            record.exc_info = None
            record.exc_text = None
        return True
