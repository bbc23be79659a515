"""The jobs' errors: what the user is told when a job cannot be created or run."""

from __future__ import annotations

from dataclasses import dataclass


class JobError(Exception):
    """A job cannot be created or run; the message is shown to the user as is."""


class JobConflict(JobError):
    pass


@dataclass
class RetryLater(Exception):
    """The model failed in a way worth retrying (429, 5xx, timeout); run again after a delay."""

    countdown: float
    reason: str
