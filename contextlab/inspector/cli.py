"""The one session loader of the command-line tools (``context``, ``compact``,
``branch-summary``): the engine's ``load_session_file`` with its errors as command errors.

A file one command opens, every command opens (a line Pi skips, such as one starting with a byte
order mark, is a warning on stderr for all of them).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError

from contextlab.pi import session as pi_session
from contextlab.pi.session import SessionFile, SessionFileError, SessionTree


def load_session(path_arg: str, stderr: Any) -> tuple[SessionFile, SessionTree]:
    """Parse the file; what Pi would refuse is an error, lines Pi skips are warnings."""
    try:
        return pi_session.load_session_file(path_arg, stderr.write)
    except SessionFileError as exc:
        raise CommandError(str(exc)) from exc


def resolve_entry(parsed: SessionFile, tree: SessionTree, value: str, option: str) -> str:
    """An entry id, or ``line:N`` (the entry on line N of the file, the header being line 1)."""
    try:
        return pi_session.resolve_entry(parsed, tree, value, option)
    except SessionFileError as exc:
        raise CommandError(str(exc)) from exc


def resolve_leaf(parsed: SessionFile, tree: SessionTree, value: str | None) -> str | None:
    """The leaf's id: the given id, ``line:N``, or (None) the entry Pi resumes at."""
    if value is None:
        return tree.leaf_id
    return resolve_entry(parsed, tree, value, "--leaf")
