"""Sessions for the review tests: small linear files written to a temp dir, imported through
the same service as the CLI and uploads, or uploaded through the web form."""

from __future__ import annotations

import io
import json
from pathlib import Path

from django.urls import reverse

from contextlab.library.importer import import_session_file
from contextlab.library.models import ProjectMembership, Session
from tests.inspector.sessions import linear_session_lines


def session_lines(session_id: str = "sess-review-1", cwd: str = "/work/team-app") -> list[dict]:
    return linear_session_lines(session_id, cwd, "please review", reply="reviewed", cost=0)


def jsonl(lines: list[dict]) -> bytes:
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def import_open(tmp_path: Path, **kwargs: str) -> Session:
    """A session imported without a user (CLI, watcher, demo): its project is open."""
    path = tmp_path / f"{kwargs.get('session_id', 'sess-review-1')}.jsonl"
    path.write_bytes(jsonl(session_lines(**kwargs)))
    session = import_session_file(path=path, index_search=False).session
    assert session is not None
    return session


def team_session(tmp_path: Path, owner, teammate=None, **kwargs: str) -> Session:  # type: ignore[no-untyped-def]
    """A session of a restricted project: owner owns it, teammate (if given) is a member."""
    session = import_open(tmp_path, **kwargs)
    ProjectMembership.objects.create(
        project=session.project, user=owner, role=ProjectMembership.Role.OWNER
    )
    if teammate is not None:
        ProjectMembership.objects.create(project=session.project, user=teammate)
    return session


def upload(client, lines: list[dict], name: str = "s.jsonl"):  # type: ignore[no-untyped-def]
    data = io.BytesIO(jsonl(lines))
    data.name = name
    return client.post(reverse("library:upload"), {"files": [data]}, follow=True)
