"""Bytes to lines: a session file split into lines from an offset, in fixed-size chunks, and the
fingerprint that tells an append from a rewrite."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

from django.conf import settings

from contextlab.library.importer.blobs import CHUNK_BYTES, BlobSink

PROBE_CHUNK_BYTES = 16 << 10
FINGERPRINT_WINDOW = 64 * 1024


@dataclass(slots=True)
class RawLine:
    line_no: int  # 1-based physical line number
    start: int  # byte offset of the line's first byte
    end: int  # byte offset just after its newline (or after its last byte if it has none)
    raw: bytes | None  # None when the line exceeded CONTEXTLAB_MAX_LINE_BYTES
    size: int
    complete: bool  # ended by a newline


def iter_lines(
    f: IO[bytes],
    offset: int,
    line_no: int,
    sink: BlobSink | None = None,
    chunk_bytes: int = CHUNK_BYTES,
) -> Iterator[RawLine]:
    """Split a byte stream into lines from `offset`, reading fixed-size chunks.

    The last piece without a newline is yielded with complete=False: the caller decides whether it
    is a finished last line or a torn one that Pi is still writing. Every chunk read is also
    handed to `sink` (the blob copy), so the file is read once.
    """
    f.seek(offset)
    limit = settings.CONTEXTLAB_MAX_LINE_BYTES  # longer lines are counted, not held
    parts: list[bytes] = []
    size = 0
    line_start = offset
    pos = offset
    reread = False  # the line outgrew one chunk: its pieces were let go, it is read again
    while True:
        chunk = f.read(chunk_bytes)
        if not chunk:
            break
        if sink is not None:
            sink.write(pos, chunk)
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            piece_end = len(chunk) if nl < 0 else nl
            piece_len = piece_end - start
            size += piece_len
            if reread or size > chunk_bytes:
                # A long line: joining its pieces would hold it twice; read it in one piece
                # once its end is found instead (from the page cache, just read).
                parts, reread = [], True
            else:
                parts.append(chunk[start:piece_end])
            if nl < 0:
                break
            raw = None
            if size <= limit:
                if reread:
                    resume = f.tell()
                    f.seek(line_start)
                    raw = f.read(size)
                    f.seek(resume)
                else:
                    raw = b"".join(parts) if len(parts) != 1 else parts[0]
            yield RawLine(line_no, line_start, pos + nl + 1, raw, size, True)
            parts, size, reread = [], 0, False
            line_no += 1
            line_start = pos + nl + 1
            start = nl + 1
        pos += len(chunk)
    if size:
        raw = None
        if size <= limit:
            if reread:
                f.seek(line_start)
                raw = f.read(size)
            else:
                raw = b"".join(parts)
        yield RawLine(line_no, line_start, pos, raw, size, False)


def fingerprint(f: IO[bytes], length: int) -> str:
    """Hash of the first and last 64 KiB of f[:length], and the length.

    Pi only ever appends; the two cases that are not appends are a shorter file (caught by the
    size) and a rewrite, which changes the header line (migration, a reset) and so the head.
    The tail window also catches a replaced file of the same head. Reading 128 KiB keeps a sync
    of a multi-GB file cheap.
    """
    digest = hashlib.sha256(str(length).encode() + b"|")
    f.seek(0)
    digest.update(f.read(min(length, FINGERPRINT_WINDOW)))
    tail_start = max(0, length - FINGERPRINT_WINDOW)
    f.seek(tail_start)
    digest.update(f.read(length - tail_start))
    return digest.hexdigest()
