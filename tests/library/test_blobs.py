"""The blob store: nothing left behind by a failed import or a full disk, and `manage.py blobs`
finds (and prunes) what disagrees with the database."""

from __future__ import annotations

import errno
import io
import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from contextlab.jobs import tasks
from contextlab.library.importer import Status, import_session_file
from contextlab.library.importer.blobs import GRACE_SECONDS, blobs_check
from contextlab.library.models import Entry, ImportProblem, Session, SessionRevision
from tests.environment import unavailable
from tests.library.conftest import chain, header, lines, message

pytestmark = pytest.mark.django_db


def files_under(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def big_session(session_id: str, megabytes: float) -> bytes:
    """A session whose tool results add up to about `megabytes` MB."""
    entries = [header(id=session_id), *chain(2)]
    parent = "e0000001"
    for i in range(int(megabytes * 4)):
        entries.append(message(f"t{i:07d}", parent, "toolResult", "x" * 250_000))
        parent = f"t{i:07d}"
    return lines(*entries)


class FailingReader(io.BytesIO):
    """A file that breaks after `after` bytes (a disk or a network mount failing mid-read)."""

    def __init__(self, data: bytes, after: int) -> None:
        super().__init__(data)
        self.after = after

    def read(self, size: int | None = -1) -> bytes:
        if self.tell() >= self.after:
            raise OSError(errno.EIO, "Input/output error")
        return super().read(size)

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        if self.tell() >= self.after:
            raise OSError(errno.EIO, "Input/output error")
        return super().readinto(buffer)


def test_a_failed_import_leaves_no_partial_blob_and_stores_nothing(blob_dir):
    data = big_session(str(uuid.uuid4()), 3)
    for _ in range(3):  # repeated failures never pile up
        with pytest.raises(OSError):
            import_session_file(
                fileobj=FailingReader(data, after=2_000_000), name="s.jsonl", index_search=False
            )
    assert files_under(blob_dir) == []
    assert not Session.objects.exists() and not Entry.objects.exists()
    assert blobs_check(grace_seconds=0).ok


def test_a_database_failure_after_the_bytes_were_copied_undoes_the_blob(
    blob_dir, write_session, monkeypatch
):
    from contextlab.library.importer import revisions as services

    path = write_session(header(), *chain(2))
    assert import_session_file(path=path).status == Status.NEW
    revision = SessionRevision.objects.get()
    kept = revision.blob_file.read_bytes()
    with path.open("ab") as fh:
        fh.write(lines(*chain(3, start=2, parent="e0000001")))

    def database_gone(*args, **kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(services, "_save_session", database_gone)
    with pytest.raises(RuntimeError):  # an append: the blob is cut back to what was stored
        import_session_file(path=path)
    assert revision.blob_file.read_bytes() == kept
    other = write_session(header(id=str(uuid.uuid4())), *chain(2), name="other.jsonl")
    with pytest.raises(RuntimeError):  # a new session: its placed blob is removed
        import_session_file(path=other)
    assert files_under(blob_dir) == [revision.blob_path]
    assert Entry.objects.count() == 2


@pytest.fixture
def tiny_disk(tmp_path, settings):
    """A 1 MB tmpfs as the blob store (needs root, as in the project's test machine)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        unavailable(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    settings.CONTEXTLAB_BLOB_DIR = mount
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_full_blob_disk_fails_the_file_clearly_leaves_nothing_and_the_next_upload_works(
    tiny_disk, tmp_path
):
    big = tmp_path / "big.jsonl"
    big.write_bytes(big_session(str(uuid.uuid4()), 2))
    result = import_session_file(path=big)
    assert result.status == Status.FAILED
    assert "blob store (CONTEXTLAB_BLOB_DIR) is full: nothing was stored" in (
        result.problems[0].reason
    )
    assert files_under(tiny_disk) == []
    assert not Session.objects.exists()
    small = tmp_path / "small.jsonl"
    small.write_bytes(lines(header(id=str(uuid.uuid4())), *chain(3)))
    assert import_session_file(path=small).status == Status.NEW
    assert blobs_check(grace_seconds=0).ok


def test_blobs_check_finds_orphans_and_missing_blobs_and_prune_removes_the_orphans(
    blob_dir, write_session, capsys
):
    import_session_file(path=write_session(header(), *chain(2)))
    import_session_file(path=write_session(header(id=str(uuid.uuid4())), *chain(2), name="b"))
    gone = SessionRevision.objects.order_by("pk").last()
    gone.blob_file.unlink()
    orphan = blob_dir / "sessions" / "ab" / "cd" / "r1.jsonl"
    orphan.parent.mkdir(parents=True)
    orphan.write_bytes(b"{}\n")
    old = 1_000_000_000
    os.utime(orphan, (old, old))
    fresh = blob_dir / "tmp" / "in-progress.part"
    fresh.parent.mkdir(parents=True, exist_ok=True)
    fresh.write_bytes(b"partial")

    with pytest.raises(SystemExit) as exit_:
        call_command("blobs", "--check", "--json")
    assert exit_.value.code == 1
    report = json.loads(capsys.readouterr().out)
    assert report["orphans"] == ["sessions/ab/cd/r1.jsonl"]
    assert report["missing"] == [gone.blob_path]
    assert report["young"] == ["tmp/in-progress.part"]  # may be an import still running
    assert orphan.exists()

    with pytest.raises(SystemExit):  # the missing blob still makes it fail
        call_command("blobs", "--prune")
    out = capsys.readouterr().out
    assert "pruned   sessions/ab/cd/r1.jsonl" in out and f"missing  {gone.blob_path}" in out
    assert not orphan.exists() and fresh.exists()
    gone.session.delete()
    call_command("blobs", "--check")  # nothing left to report: exits normally


def _upload_junk(client, data: bytes, name: str = "junk.bin"):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return client.post(reverse("library:upload"), {"files": [SimpleUploadedFile(name, data)]})


def test_re_uploading_an_unusable_file_under_its_name_keeps_one_copy(
    owner_client, blob_dir, django_capture_on_commit_callbacks
):
    for _ in range(3):
        with django_capture_on_commit_callbacks(execute=True):
            assert _upload_junk(owner_client, os.urandom(200_000)).status_code == 302
    kept = files_under(blob_dir / "unusable")
    paths = set(ImportProblem.objects.exclude(blob_path="").values_list("blob_path", flat=True))
    assert [f"unusable/{name}" for name in kept] == list(paths)
    assert blobs_check(grace_seconds=0).ok


def test_a_copy_another_upload_still_uses_is_not_removed(
    client, owner, teammate, blob_dir, django_capture_on_commit_callbacks
):
    junk = os.urandom(50_000)
    for user in (owner, teammate):  # the same bytes: one shared copy
        client.force_login(user)
        with django_capture_on_commit_callbacks(execute=True):
            _upload_junk(client, junk)
    assert len(files_under(blob_dir / "unusable")) == 1
    client.force_login(owner)
    with django_capture_on_commit_callbacks(execute=True):
        _upload_junk(client, os.urandom(50_000))  # the owner's record is replaced
    assert len(files_under(blob_dir / "unusable")) == 2  # the teammate's copy stays
    assert blobs_check(grace_seconds=0).ok


def test_of_an_unusable_file_only_its_first_bytes_are_kept_and_the_page_says_so(
    owner_client, blob_dir, settings
):
    settings.CONTEXTLAB_UNUSABLE_KEEP_BYTES = 1000
    junk = b"not a session line\n" * 10_000
    _upload_junk(owner_client, junk, name="big-junk.jsonl")
    problem = ImportProblem.objects.exclude(blob_path="").first()
    assert problem.blob_file.read_bytes() == junk[:1000]
    page = owner_client.get(reverse("library:index")).content.decode()
    assert (
        f"the file has {len(junk):,} bytes: only its first 1,000 bytes are kept "
        "(CONTEXTLAB_UNUSABLE_KEEP_BYTES)"
    ) in page
    settings.CONTEXTLAB_UNUSABLE_KEEP_BYTES = 0
    _upload_junk(owner_client, junk, name="other-junk.jsonl")
    assert ImportProblem.objects.filter(path="other-junk.jsonl", blob_path="").exists()
    assert "none of it is kept" in owner_client.get(reverse("library:index")).content.decode()
    assert len(files_under(blob_dir / "unusable")) == 1


@pytest.mark.django_db(transaction=True)  # the sweep closes its database connection
def test_the_worker_sweep_removes_temporary_blobs_of_killed_imports(blob_dir):
    tmp = blob_dir / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    old, fresh = tmp / "killed.part", tmp / "running.part"
    old.write_bytes(b"half a file")
    fresh.write_bytes(b"being written")
    past = time.time() - GRACE_SECONDS - 1
    os.utime(old, (past, past))
    tasks.worker_sweep_once()
    assert not old.exists() and fresh.exists()
