"""The per-user model-call limit holds under simultaneous requests (real threads, each with its
own PostgreSQL connection)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from contextlab.jobs import services
from contextlab.jobs.models import Job
from contextlab.library.importer import import_session_file
from contextlab.library.models import Session
from tests.library.conftest import chain, header, lines


@pytest.fixture(autouse=True)
def blob_dir(settings, tmp_path):
    settings.CONTEXTLAB_BLOB_DIR = tmp_path / "blobs"
    return settings.CONTEXTLAB_BLOB_DIR


def _sessions(tmp_path, n: int) -> list[Session]:
    sessions = []
    for i in range(n):
        path = tmp_path / f"s{i}.jsonl"
        path.write_bytes(lines(header(id=f"0190d6f2-aaaa-7bbb-8ccc-{i:012d}"), *chain(4)))
        result = import_session_file(path=path, index_search=False)
        assert result.session is not None, result
        sessions.append(result.session)
    return sessions


@pytest.mark.django_db(transaction=True)
def test_it_accepts_exactly_the_limit_when_eight_requests_arrive_at_once(
    settings, tmp_path, django_user_model
):
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL")
    settings.CONTEXTLAB_MODEL_CALLS_PER_USER_PER_HOUR = 2
    settings.CONTEXTLAB_LLM = {
        **settings.CONTEXTLAB_LLM,
        "provider": "anthropic",
        "anthropic": {**settings.CONTEXTLAB_LLM["anthropic"], "api_key": "test-key"},
    }
    user = django_user_model.objects.create_user(username="hasty", password="x" * 20)
    sessions = _sessions(tmp_path, 8)
    barrier = threading.Barrier(len(sessions))
    accepted: list[int] = []
    refused: list[str] = []
    crashed: list[BaseException] = []

    def request(session: Session) -> None:
        try:
            barrier.wait(timeout=30)
            job = services.job_create(
                session=session, kind="compaction", requested_by=user, enqueue=False
            )
            accepted.append(job.pk)
        except services.JobError as exc:
            refused.append(str(exc))
        except BaseException as exc:  # reported by the assertion below
            crashed.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=request, args=(s,)) for s in sessions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert crashed == []
    assert len(accepted) == 2 and len(refused) == 6
    assert all("limit per user" in message for message in refused)
    assert Job.objects.filter(requested_by=user).count() == 2
