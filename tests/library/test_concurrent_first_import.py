"""Two first imports at once: no row exists yet to lock, so the importer takes transaction
locks (library/locks.py) and the second import chooses the project only once the first one's
transaction has ended. Without them both chose at once, on what neither had stored: a unique
constraint sent one round again, and a choice whose queries straddled the other's commit (its
own project visible, its membership not yet) refused the session as "project unavailable"
(two clients pushing one new session, under load).

Each test makes both imports meet inside the project choice when they can (a barrier, given up
after a second) and records what each choice saw: with the locks, the second sees the first's
project."""

from __future__ import annotations

import contextlib
import io
import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from contextlab.library import models as library_models
from contextlab.library.importer import import_session_file
from contextlab.library.models import Project, Session
from tests.library.conftest import header, lines, message

pytestmark = pytest.mark.django_db(transaction=True)


def session_bytes(session_id: str) -> bytes:
    return lines(
        header(id=session_id, cwd="/home/u/shared-folder"),
        message("a1", None, "user", "hello"),
        message("a2", "a1", "assistant", "hi"),
    )


def at_once(
    monkeypatch: pytest.MonkeyPatch, seen: list[int], *jobs: Callable[[], Any]
) -> list[Any]:
    """Runs the jobs in threads (each its own connection), meeting inside project_choice; `seen`
    gets the number of projects of the folder each choice saw."""
    barrier = threading.Barrier(len(jobs))
    choose = library_models.project_choice

    def meeting(cwd: str, user: Any) -> Any:
        # The other one may wait on the lock: then go on alone.
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait(timeout=1)
        seen.append(Project.objects.filter(cwd=cwd).count())
        return choose(cwd, user)

    monkeypatch.setattr(library_models, "project_choice", meeting)
    results: list[Any] = [None] * len(jobs)

    def run(i: int) -> None:
        try:
            results[i] = jobs[i]()
        except BaseException as error:  # reported by the test
            results[i] = error
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def _import(user: Any, data: bytes, name: str) -> Any:
    return import_session_file(fileobj=io.BytesIO(data), name=name, user=user, index_search=False)


def test_two_new_sessions_from_one_folder_at_once_share_the_users_new_project(
    monkeypatch, django_user_model
):
    alice = django_user_model.objects.create_user(username="alice", password="x" * 20)
    first = "0190d6f2-aaaa-7bbb-8ccc-000000000001"
    second = "0190d6f2-aaaa-7bbb-8ccc-000000000002"
    seen: list[int] = []
    results = at_once(
        monkeypatch,
        seen,
        lambda: _import(alice, session_bytes(first), "one.jsonl"),
        lambda: _import(alice, session_bytes(second), "two.jsonl"),
    )
    assert [getattr(r, "status", r) for r in results] == ["new", "new"], results
    assert seen == [0, 1], "the second choice waited for the first one's project"
    assert Project.objects.filter(cwd="/home/u/shared-folder").count() == 1
    project = Project.objects.get(cwd="/home/u/shared-folder")
    assert set(Session.objects.values_list("project", flat=True)) == {project.pk}
    assert project.memberships.get().user == alice


def test_the_same_new_session_imported_twice_at_once_is_stored_once(monkeypatch, django_user_model):
    alice = django_user_model.objects.create_user(username="alice", password="x" * 20)
    data = session_bytes("0190d6f2-aaaa-7bbb-8ccc-000000000003")
    seen: list[int] = []
    results = at_once(
        monkeypatch,
        seen,
        lambda: _import(alice, data, "s.jsonl"),
        lambda: _import(alice, data, "s.jsonl"),
    )
    assert sorted(getattr(r, "status", r) for r in results) == ["new", "unchanged"], results
    assert seen == [0], "the second import waited, then found the session: no project to choose"
    session = Session.objects.get()
    assert session.entry_count == 2
    assert session.revisions.count() == 1


def test_a_choice_whose_queries_straddle_a_first_push_of_the_same_user_finds_its_project(
    django_user_model,
):
    """The upload check chooses outside the import's locks (a read before the push is taken
    in): when the user's own project and membership, made together by a concurrent first push,
    commit between its lookup of their projects and its check for one they made, it reads
    again rather than refusing the push as "project unavailable" (seen under load: both
    pushes of one new session answered 500)."""
    alice = django_user_model.objects.create_user(username="alice", password="x" * 20)
    cwd = "/home/u/straddled"
    made: list[Project] = []

    def commit_meanwhile(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        if not made and '"created_by_id"' in sql and "LIMIT 1" in sql and "JOIN" not in sql:
            made.append(Project.objects.create(cwd=cwd, created_by=alice, restricted=True))
            library_models.ProjectMembership.objects.create(
                project=made[0], user=alice, role="owner", added_by=alice
            )
        return execute(sql, params, many, context)

    with connection.execute_wrapper(commit_meanwhile):
        chosen = library_models.project_choice(cwd, alice)
    assert made, "the straddling commit happened before the check for her own project"
    assert chosen == made[0]
