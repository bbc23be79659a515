"""The original bytes of every revision, kept under CONTEXTLAB_BLOB_DIR.

A new blob is written under ``tmp/`` and moved to its place (an atomic rename on the same
filesystem) only once all of it was written; an import that fails (a bad file, a full disk, the
database gone) undoes what it did to the store: a new blob is removed, an append is cut back to
where it started. ``manage.py blobs --check`` lists what still disagrees with the database
(blobs no row points to, and rows whose blob is missing or shorter than what was read);
``--prune`` removes the former.
"""

from __future__ import annotations

import errno
import hashlib
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from django.conf import settings

from contextlab.library.models import ImportProblem, SessionRevision

CHUNK_BYTES = 1 << 20  # files are read, copied and hashed a chunk at a time


def blob_dir() -> Path:
    return Path(settings.CONTEXTLAB_BLOB_DIR)


def session_blob_path(session_id: str, number: int) -> str:
    # Session ids come from files: hash them rather than trusting them in a path.
    key = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()
    return f"sessions/{key[:2]}/{key[:32]}/r{number}.jsonl"


class BlobSink:
    """Copies the chunks of a file to a revision's blob as they are read, keeping the blob exactly
    the bytes consumed: `finish(end)` cuts off a torn tail that was read but not consumed.

    For a new blob the sha256 of those bytes is computed on the way (the hash state before the
    last chunk is kept, so the tail can be excluded without reading anything again).
    """

    def __init__(self, target: Path, start: int, *, new: bool) -> None:
        # A new blob is written under a temporary name and moved into place by finish(); an
        # append goes to the blob itself, cut back to `start` if the import fails.
        self.target = target
        if new or not target.exists():
            self.path = temp_path()
            self.out: IO[bytes] = self.path.open("wb")
            self.out.seek(start if not new else 0)
        else:
            self.path = target
            self.out = target.open("r+b")
            truncate_on_failure(target, start)
            # An earlier failed sync may have left bytes past the recorded offset: overwrite.
            self.out.seek(start)
            self.out.truncate()
        self.digest = hashlib.sha256() if new else None
        self._before_last: Any = None
        self._last: tuple[int, bytes] | None = None

    def write(self, pos: int, chunk: bytes) -> None:
        self.out.write(chunk)
        if self.digest is not None:
            self._before_last = self.digest.copy()
            self._last = (pos, chunk)
            self.digest.update(chunk)

    def finish(self, end: int) -> str:
        """Keep exactly f[start:end]; return the sha256 of a new blob ("" for appends)."""
        try:
            self.out.truncate(end)  # blob offsets are file offsets
            self.out.close()
            if self.path != self.target:
                place(self.path, self.target)
                self.path = self.target
        except BaseException:
            self.abort()
            raise
        if self.digest is None:
            return ""
        if self._last is None or self._last[0] + len(self._last[1]) <= end:
            return self.digest.hexdigest()
        pos, chunk = self._last
        if pos <= end:
            digest = self._before_last
            digest.update(chunk[: end - pos])
            return str(digest.hexdigest())
        # A torn tail longer than a chunk (rare): hash what was kept from the blob itself.
        digest = hashlib.sha256()
        with self.path.open("rb") as kept:
            for block in iter(lambda: kept.read(CHUNK_BYTES), b""):
                digest.update(block)
        return digest.hexdigest()

    def abort(self) -> None:
        self.out.close()
        if self.path != self.target:
            self.path.unlink(missing_ok=True)


def copy_to_blob(f: IO[bytes], start: int, end: int, target: Path, *, new: bool) -> str:
    """Copy f[start:end] to the blob `target` (a new one, from 0; or an existing one, from
    `start`); returns the sha256 of a new blob ("" for an append)."""
    sink = BlobSink(target, start, new=new)
    try:
        f.seek(start)
        pos = start
        while pos < end:
            chunk = f.read(min(CHUNK_BYTES, end - pos))
            if not chunk:
                break
            sink.write(pos, chunk)
            pos += len(chunk)
    except BaseException:
        sink.abort()
        raise
    return sink.finish(end)


TMP_DIR = "tmp"
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


def temp_path() -> Path:
    """A fresh name under the store's tmp/ (same filesystem: the final move is a rename)."""
    folder = blob_dir() / TMP_DIR
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{uuid.uuid4().hex}.part"


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in DISK_FULL


# --------------------------------------------------------------------------------------------
# Undo on failure
# --------------------------------------------------------------------------------------------

_local = threading.local()


def _undo_stack() -> list[Callable[[], None]] | None:
    return getattr(_local, "stack", None)


@contextmanager
def undone_on_failure() -> Iterator[None]:
    """Around an import's transaction: if it raises, what it did to the store is undone."""
    outer = _undo_stack()
    stack: list[Callable[[], None]] = []
    _local.stack = stack
    try:
        yield
    except BaseException:
        for action in reversed(stack):
            with suppress(OSError):
                action()
        stack.clear()
        raise
    finally:
        _local.stack = outer
        if outer is not None:
            # Nested: the outer scope's failure must undo these too.
            outer.extend(stack)


def on_failure(action: Callable[[], None]) -> None:
    stack = _undo_stack()
    if stack is not None:
        stack.append(action)


def place(temp: Path, target: Path) -> None:
    """Move a finished blob into place; removed again if the import then fails."""
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(temp, target)
    on_failure(lambda: target.unlink(missing_ok=True))


def truncate_on_failure(target: Path, size: int) -> None:
    """An append to an existing blob: cut it back to `size` if the import fails."""

    def undo() -> None:
        with target.open("r+b") as fh:
            fh.truncate(size)

    on_failure(undo)


# --------------------------------------------------------------------------------------------
# Check and prune
# --------------------------------------------------------------------------------------------


@dataclass
class BlobReport:
    orphans: list[str] = field(default_factory=list)  # files no row points to
    missing: list[str] = field(default_factory=list)  # rows whose file is not there
    short: list[str] = field(default_factory=list)  # files shorter than what was read
    young: list[str] = field(default_factory=list)  # unreferenced but recent: maybe in use
    pruned: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.short or set(self.orphans) - set(self.pruned))

    def as_json(self) -> dict[str, list[str]]:
        return {
            "orphans": self.orphans,
            "missing": self.missing,
            "short": self.short,
            "young": self.young,
            "pruned": self.pruned,
        }


# How old an unreferenced file must be before it counts as an orphan: a younger one may belong
# to an import still running (a running import writes its temporary file continuously).
GRACE_SECONDS = 600.0


def prune_temp_files(*, grace_seconds: float = GRACE_SECONDS) -> list[str]:
    """Remove temporary blobs (tmp/*.part) older than `grace_seconds`: what an import killed
    before it could remove its own left behind. Returns their names (relative to the store)."""
    folder = blob_dir() / TMP_DIR
    removed: list[str] = []
    if not folder.is_dir():
        return removed
    now = time.time()
    for path in folder.glob("*.part"):
        with suppress(FileNotFoundError):
            if now - path.stat().st_mtime >= grace_seconds:
                path.unlink()
                removed.append(f"{TMP_DIR}/{path.name}")
    return removed


def blobs_check(*, prune: bool = False, grace_seconds: float = GRACE_SECONDS) -> BlobReport:
    """Compare the store with the database.

    1. Every revision's blob must exist and hold at least the bytes read from its file.
    2. Every file in the store must belong to a revision or to a file that yielded no session;
       one that does not is an orphan once older than `grace_seconds` (younger ones may belong
       to an import still running), and `prune` removes it.
    """
    root = blob_dir()
    report = BlobReport()
    referenced: set[str] = set()
    for path, size in SessionRevision.objects.values_list("blob_path", "bytes_read").iterator():
        referenced.add(path)
        try:
            actual = (root / path).stat().st_size
        except FileNotFoundError:
            report.missing.append(path)
            continue
        if actual < size:
            report.short.append(path)
    referenced.update(
        ImportProblem.objects.exclude(blob_path="").values_list("blob_path", flat=True)
    )
    if not root.exists():
        return report
    now = time.time()
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            full = Path(dirpath) / name
            relative = full.relative_to(root).as_posix()
            if relative in referenced:
                continue
            try:
                age = now - full.stat().st_mtime
            except FileNotFoundError:
                continue
            if age < grace_seconds:
                report.young.append(relative)
                continue
            report.orphans.append(relative)
            if prune:
                full.unlink(missing_ok=True)
                report.pruned.append(relative)
    report.orphans.sort()
    report.missing.sort()
    if prune:
        _remove_empty_dirs(root)
    return report


def _remove_empty_dirs(root: Path) -> None:
    for dirpath, _dirs, _files in sorted(os.walk(root), key=lambda w: -len(w[0])):
        if Path(dirpath) != root:
            with suppress(OSError):
                os.rmdir(dirpath)  # only succeeds when empty
