"""The original bytes of every revision, kept under CONTEXTLAB_BLOB_DIR."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import IO, Any

from django.conf import settings

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
        target.parent.mkdir(parents=True, exist_ok=True)
        self.path = target
        self.out = target.open("wb" if new else "r+b" if target.exists() else "wb")
        # An earlier failed sync may have left bytes past the recorded offset: write over them.
        self.out.seek(0 if new else start)
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
        self.out.truncate(end)  # blob offsets are file offsets
        self.out.close()
        if self.digest is None:
            return ""
        if self._last is None or self._last[0] + len(self._last[1]) <= end:
            return self.digest.hexdigest()
        pos, chunk = self._last
        if pos <= end:
            digest = self._before_last
            digest.update(chunk[: end - pos])
            return digest.hexdigest()
        # A torn tail longer than a chunk (rare): hash what was kept from the blob itself.
        digest = hashlib.sha256()
        with self.path.open("rb") as kept:
            for block in iter(lambda: kept.read(CHUNK_BYTES), b""):
                digest.update(block)
        return digest.hexdigest()

    def abort(self) -> None:
        self.out.close()


def copy_to_blob(f: IO[bytes], start: int, end: int, target: Path, *, new: bool) -> str:
    """Copy f[start:end] to the blob `target` (a new one, from 0; or an existing one, from
    `start`); returns the sha256 of a new blob ("" for an append)."""
    sink = BlobSink(target, start, new=new)
    f.seek(start)
    pos = start
    while pos < end:
        chunk = f.read(min(CHUNK_BYTES, end - pos))
        if not chunk:
            break
        sink.write(pos, chunk)
        pos += len(chunk)
    return sink.finish(end)
