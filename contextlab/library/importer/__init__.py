"""Import and sync of Pi session files into the library (one service for CLI, watcher and upload).

Parsing and migration are the engine's (contextlab.pi.session); this package does the storage side:
streaming the bytes, line boundaries and offsets, torn last lines, fingerprints, revisions, the
blob copy of the original bytes, and the rows.

Memory stays flat in the file size: the file is read in 1 MiB chunks and entries are written in
batches. What grows with the session is a small map per entry (id -> parent, depth), needed to
place every entry in the tree; a line is held whole only while it is decoded.

Its parts, in the order a file goes through them:

- `lines`: bytes to lines from an offset, fingerprints;
- `blobs`: the copy of the original bytes of every revision;
- `decoding`: a line decoded as Pi reads it, the header probe;
- `revisions`: the import itself (new, appended, unchanged, revised) into rows, written through
  `contextlab.library.storage` (values, figures, tree bookkeeping, COPY writer).
"""

from contextlab.library.importer.decoding import Probe, probe_header
from contextlab.library.importer.revisions import ImportResult, Status, import_session_file

__all__ = [
    "ImportResult",
    "Probe",
    "Status",
    "import_session_file",
    "probe_header",
]
