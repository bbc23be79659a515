"""`manage.py import_sessions` (JSON contract, folders, --watch) and `manage.py demo`."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection

from contextlab.library.models import Entry, Session
from tests.conftest import REPO
from tests.library.conftest import chain, header, lines
from tests.waiting import wait_until


def run_json(*args: str) -> dict:
    out = io.StringIO()
    with contextlib.suppress(SystemExit):
        call_command("import_sessions", *args, "--json", stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


@pytest.mark.django_db
def test_it_prints_the_json_contract(write_session) -> None:
    good = write_session(header(), *chain(3), b"not json", name="a/good.jsonl")
    empty = write_session(raw=b"", name="b/empty.jsonl")
    report = run_json(str(good.parent.parent))
    assert set(report) == {"files", "bytes", "seconds"}
    assert isinstance(report["seconds"], float) and report["bytes"] == good.stat().st_size
    assert report["files"] == [
        {
            "path": str(good),
            "sessionId": "0190d6f2-aaaa-7bbb-8ccc-123456789abc",
            "status": "new",
            "entries": 3,
            "newEntries": 3,
            "problems": [{"line": 5, "reason": report["files"][0]["problems"][0]["reason"]}],
        },
        {
            "path": str(empty),
            "sessionId": None,
            "status": "failed",
            "entries": 0,
            "newEntries": 0,
            "problems": [{"line": 0, "reason": "empty file: no session header"}],
        },
    ]
    assert report["files"][0]["problems"][0]["reason"].startswith("invalid JSON")
    again = run_json(str(good))
    assert again["files"][0]["status"] == "unchanged" and again["bytes"] == 0


@pytest.mark.django_db
def test_it_prints_a_summary_and_exits_1_when_a_file_failed(write_session) -> None:
    folder = write_session(header(), *chain(2), name="ok.jsonl").parent
    write_session(raw=b"\n\n", name="blank.jsonl")
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(SystemExit) as exit_info:
        call_command("import_sessions", str(folder), stdout=out, stderr=err)
    assert exit_info.value.code == 1
    summary = out.getvalue().splitlines()[-1]
    assert summary.startswith(
        "2 files: 1 new, 0 updated (0 appended, 0 revised), 0 unchanged, 1 failed"
    )
    assert "2 entries stored" in summary and "MB/s" in summary
    assert "no session header" in err.getvalue()


@pytest.mark.django_db(transaction=True)
def test_it_watches_a_folder_for_new_files_and_appended_lines(write_session) -> None:
    first = write_session(header(), *chain(2), name="one.jsonl")
    folder = first.parent
    out = io.StringIO()
    with watching(folder, stdout=out):
        wait_until(lambda: Entry.objects.count() == 2, what="the first file's two entries")
        with first.open("ab") as f:
            f.write(lines(*chain(1, start=2, parent="e0000001")))
        wait_until(lambda: Entry.objects.count() == 3, what="the appended entry")
        other = header(id="0190d6f2-bbbb-7bbb-8ccc-123456789abc")
        full = lines(other, *chain(2))
        # Pi caught mid-write. The file appears with its torn bytes at once (os.replace), so the
        # watcher cannot see the empty file that a create-then-write leaves for an instant.
        (folder / "two.partial").write_bytes(full[:-10])
        os.replace(folder / "two.partial", folder / "two.jsonl")
        wait_until(lambda: Session.objects.count() == 2, what="the second session")
        assert Entry.objects.filter(session__session_id=other["id"]).count() == 1
        with (folder / "two.jsonl").open("ab") as f:
            f.write(full[-10:])
        wait_until(
            lambda: Entry.objects.filter(session__session_id=other["id"]).count() == 2,
            what="the rest of the torn line",
        )
    assert "appended" in out.getvalue()
    assert Session.objects.get(session_id=other["id"]).problem_count == 0


@pytest.mark.django_db(transaction=True)
def test_it_stores_the_tree_index_of_a_watched_session_once_its_file_is_quiet(
    write_session,
) -> None:
    from contextlab.inspector.selectors import index_stored

    path = write_session(header(), *chain(2))
    with watching(path.parent, "--index-after", "1.5"):
        # The first pass stores it.
        wait_until(
            lambda: Session.objects.exists() and index_stored(Session.objects.get()),
            what="the first tree index",
        )
        with path.open("ab") as f:
            f.write(lines(*chain(1, start=2, parent="e0000001")))
        wait_until(lambda: Session.objects.get().entry_count == 3, what="the appended entry")
        # Synced but not indexed yet: Pi may be appending again within the quiet period.
        assert not index_stored(Session.objects.get())
        wait_until(
            lambda: index_stored(Session.objects.get()), what="the index once the file is quiet"
        )


@pytest.mark.django_db(transaction=True)
def test_it_syncs_a_watched_file_as_soon_as_the_system_reports_a_change(write_session) -> None:
    # Scans are 60 s apart here: only a file event can bring the appended line in time.
    path = write_session(header(), *chain(2))
    out = io.StringIO()
    with watching(path.parent, "--interval", "60", stdout=out):
        # "Watching" is printed once file events are on.
        wait_until(lambda: "Watching" in out.getvalue(), what="the watcher to start")
        assert Entry.objects.count() == 2
        with path.open("ab") as f:
            f.write(lines(*chain(1, start=2, parent="e0000001")))
        wait_until(lambda: Entry.objects.count() == 3, timeout=10, what="the appended entry")
        (path.parent / "sub").mkdir()  # a new folder, then a session in it
        write_session(
            header(id="0190d6f2-cccc-7bbb-8ccc-123456789abc"), *chain(1), name="sub/new.jsonl"
        )
        wait_until(
            lambda: Session.objects.count() == 2, timeout=10, what="the session in the new folder"
        )


@contextlib.contextmanager
def watching(folder: Path, *options: str, stdout: io.StringIO | None = None):
    """`import_sessions FOLDER --watch` in a thread for the block; its errors fail the test."""
    stop = threading.Event()
    errors: list[BaseException] = []

    def watch() -> None:
        try:
            call_command(
                "import_sessions",
                str(folder),
                "--watch",
                "--interval",
                "0.1",
                "--watch-seconds",
                "60",
                *options,
                stop_event=stop,
                stdout=stdout or io.StringIO(),
                stderr=io.StringIO(),
            )
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=watch)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=15)
    assert not thread.is_alive() and errors == []


@pytest.mark.django_db
def test_it_rejects_a_path_that_does_not_exist(tmp_path: Path) -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="No such file or folder"):
        call_command("import_sessions", str(tmp_path / "missing"))


@pytest.mark.django_db
def test_it_imports_the_demo_and_prints_a_login(settings) -> None:
    settings.DEBUG = True
    out = io.StringIO()
    call_command("demo", stdout=out)
    text = out.getvalue()
    assert Session.objects.count() == 4
    password = text.split("password '")[1].split("'")[0]
    user = get_user_model().objects.get(username="demo")
    assert user.check_password(password) and not user.is_staff
    call_command("demo", stdout=io.StringIO())
    assert Session.objects.count() == 4  # idempotent


@pytest.mark.django_db
def test_it_refuses_the_demo_login_with_debug_off(settings) -> None:
    from django.core.management.base import CommandError

    settings.DEBUG = False
    with pytest.raises(CommandError, match="DEBUG off"):
        call_command("demo", stdout=io.StringIO())


def test_it_runs_on_embedded_sqlite_with_a_working_search(tmp_path: Path) -> None:
    """The README's first command: no DATABASE_URL, no REDIS_URL; the LIKE search fallback."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(
        CONTEXTLAB_VAR_DIR=str(tmp_path / "var"), DJANGO_SETTINGS_MODULE="contextlab.settings"
    )
    manage = [sys.executable, str(REPO / "manage.py")]
    for args in (["migrate", "-v0"], ["demo"]):
        subprocess.run([*manage, *args], env=env, cwd=REPO, check=True, capture_output=True)
    script = (
        "from django.db import connection;"
        "from contextlab.library.search import snippet_html;"
        "from contextlab.library.selectors import search_entries;"
        "hits = list(search_entries('licence'));"
        "print(connection.vendor, len(hits), snippet_html(hits[0]))"
    )
    done = subprocess.run(
        [*manage, "shell", "-c", script],
        env=env,
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    )
    vendor, count, snippet = done.stdout.strip().splitlines()[-1].split(" ", 2)
    assert vendor == "sqlite" and int(count) >= 2
    assert "<mark>licence</mark>" in snippet
    assert (tmp_path / "var" / "contextlab.sqlite3").exists()


@pytest.mark.django_db(transaction=True)
def test_it_imports_the_same_new_file_once_when_two_syncs_race(write_session) -> None:
    from contextlab.library.importer import import_session_file

    path = write_session(header(), *chain(200))
    statuses: list[str] = []
    barrier = threading.Barrier(2)

    def sync() -> None:
        try:
            barrier.wait()
            statuses.append(import_session_file(path=path).status)
        finally:
            connection.close()

    threads = [threading.Thread(target=sync) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(statuses) == ["new", "unchanged"]
    assert Session.objects.count() == 1 and Entry.objects.count() == 200
