"""Read-side queries of the review app."""

from __future__ import annotations
