"""`manage.py import_sessions PATH... [--json] [--watch]`: import Pi session files or folders.

A thin wrapper over contextlab.library.importer.import_session_file (the upload view uses the same
service). Folders are searched recursively for *.jsonl, so `~/.pi/agent/sessions` works as is.
Exit status: 0, or 1 when a file failed (no session could be read from it).
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from contextlab.inspector.services import store_tree_indexes, tree_index_refresh
from contextlab.library.importer import ImportResult, Status, import_session_file
from contextlab.library.search import index_pending
from contextlab.review.services import audit_imports, command_actor

MB = 1024 * 1024


def _audit(
    command: str, statuses: tuple[str, ...] = (Status.NEW, Status.APPENDED, Status.REVISED)
) -> Callable[[ImportResult], None]:
    """The audit event of one imported file, recorded in the import's own transaction."""
    actor = command_actor(command)

    def record(result: ImportResult) -> None:
        audit_imports(results=[result], actor_label=actor, statuses=statuses)

    return record


def find_session_files(paths: list[Path]) -> list[Path]:
    """Files as given, folders searched recursively for *.jsonl; sorted, without duplicates."""
    found: dict[Path, None] = {}
    for path in paths:
        if path.is_dir():
            for file in sorted(path.rglob("*.jsonl")):
                if file.is_file():
                    found[file] = None
        else:
            found[path] = None
    return list(found)


class Progress:
    """A one-line progress bar on stderr (only on a terminal)."""

    def __init__(self, stream: Any, total: int) -> None:
        self.stream = stream
        self.total = max(total, 1)
        self.done = 0
        self.enabled = hasattr(stream, "isatty") and stream.isatty()
        self.started = time.perf_counter()
        self._last = 0.0

    def update(self, done: int, label: str) -> None:
        self.done = done
        now = time.perf_counter()
        if not self.enabled or now - self._last < 0.1:
            return
        self._last = now
        fraction = min(done / self.total, 1.0)
        bar = "#" * int(fraction * 30)
        rate = done / MB / max(now - self.started, 1e-9)
        self.stream.write(
            f"\r[{bar:<30}] {fraction:4.0%} {done / MB:8.1f}/{self.total / MB:.1f} MB "
            f"{rate:6.1f} MB/s  {label[-40:]:<40}"
        )
        self.stream.flush()

    def clear(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * 120 + "\r")
            self.stream.flush()


class Command(BaseCommand):
    help = "Import Pi session files (or folders of them, recursively) into the library."
    # A threading.Event that ends --watch (for embedding the watcher, and for tests).
    stealth_options = ("stop_event",)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", help="session files or folders")
        parser.add_argument(
            "--json", action="store_true", help="print one JSON object, no progress bar"
        )
        parser.add_argument(
            "--watch",
            action="store_true",
            help="after importing, follow the folders and files: new files, appended lines",
        )
        parser.add_argument(
            "--interval",
            type=float,
            default=1.0,
            help="seconds between watch scans when no file event arrives (default 1)",
        )
        parser.add_argument(
            "--index-after",
            type=float,
            default=5.0,
            help="while watching, store a session's tree index once its file has been quiet "
            "this many seconds (default 5)",
        )
        parser.add_argument(
            "--watch-seconds",
            type=float,
            default=None,
            help="stop watching after this many seconds (default: until interrupted)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        paths = [Path(p).expanduser() for p in options["paths"]]
        missing = [str(p) for p in paths if not p.exists()]
        if missing:
            raise CommandError(f"No such file or folder: {', '.join(missing)}")
        as_json = options["json"]
        files = find_session_files(paths)
        # Stat before importing: a line Pi appends while the first pass runs then still differs
        # from what --watch has seen, and is synced on its first scan instead of being missed.
        seen = {f: _stat(f) for f in files}
        results, seconds = self._import_all(files, as_json)
        store_tree_indexes(results)
        if as_json:
            self.stdout.write(json.dumps(results_json(results, seconds), ensure_ascii=False))
        else:
            self._print_summary(results, seconds)
        if options["watch"]:
            self._watch(
                paths,
                options["interval"],
                options["watch_seconds"],
                as_json,
                options.get("stop_event"),
                seen,
                options["index_after"],
            )
        if any(r.status == Status.FAILED for r in results):
            sys.exit(1)

    def _import_all(self, files: list[Path], quiet: bool) -> tuple[list[ImportResult], float]:
        total = 0
        for file in files:
            with contextlib.suppress(OSError):
                total += file.stat().st_size
        progress = Progress(None if quiet else sys.stderr, total)
        started = time.perf_counter()
        results: list[ImportResult] = []
        base = 0
        for file in files:
            label = file.name

            def report(done: int, b: int = base, name: str = label) -> None:
                progress.update(b + done, name)

            result = import_session_file(
                path=file,
                progress=report if progress.enabled else None,
                within=_audit("import_sessions"),
            )
            results.append(result)
            with contextlib.suppress(OSError):
                base += file.stat().st_size
        progress.clear()
        return results, time.perf_counter() - started

    def _print_summary(self, results: list[ImportResult], seconds: float) -> None:
        for result in results:
            self.stdout.write(
                f"{result.status:<9} {result.path}"
                + (f"  +{result.new_entries} entries" if result.new_entries else "")
            )
            for problem in result.problems[:20]:
                where = f"{result.path}:{problem.line}" if problem.line else result.path
                self.stderr.write(f"  {where}: {problem.reason}")
            if len(result.problems) > 20:
                self.stderr.write(f"  … and {len(result.problems) - 20} more problems")
        counts = {s: 0 for s in ("new", "appended", "revised", "unchanged", "failed")}
        for result in results:
            counts[result.status] += 1
        data = sum(r.bytes_read for r in results)
        rate = data / MB / seconds if seconds > 0 else 0.0
        self.stdout.write(
            f"{len(results)} files: {counts['new']} new, "
            f"{counts['appended'] + counts['revised']} updated "
            f"({counts['appended']} appended, {counts['revised']} revised), "
            f"{counts['unchanged']} unchanged, {counts['failed']} failed; "
            f"{sum(r.new_entries for r in results)} entries stored, "
            f"{sum(len(r.problems) for r in results)} problems (bad lines and the like); "
            f"{data / MB:.1f} MB in {seconds:.2f} s ({rate:.1f} MB/s, of which "
            f"{sum(r.index_seconds for r in results):.2f} s search indexing)"
        )

    def _watch(
        self,
        paths: list[Path],
        interval: float,
        limit: float | None,
        as_json: bool,
        stop_event: Any = None,
        seen: dict[Path, Any] | None = None,
        index_after: float = 5.0,
    ) -> None:
        """Sync the files whose size or modification time changed.

        As soon as the operating system reports a change below the watched paths (inotify and
        the like, through watchdog), the files it names are looked at, so a line Pi appends
        shows in the dashboard within a fraction of a second. Every `interval` seconds all
        files are stat'ed as well (cheap next to Pi's own writes), which covers filesystems that
        report nothing (network mounts, some Docker volumes) and any event missed.

        Tree indexes are not stored on each sync: a session Pi is writing grows every few
        seconds, and rebuilding its index each time (~0.5 s for 20k entries) would be wasted.
        Once a session's file has been quiet for `index_after` seconds (Pi's turn is over), its
        index is stored, so the next open of the session in the dashboard starts from it.
        """
        deadline = None if limit is None else time.monotonic() + limit
        if seen is None:
            seen = {f: _stat(f) for f in find_session_files(paths)}
        settling: dict[int, float] = {}  # session pk -> when its file last changed
        try:
            with _file_events(paths) as events:
                if not as_json:  # once file events are on
                    self.stdout.write(
                        f"Watching {len(seen)} files in {', '.join(map(str, paths))} …"
                    )
                    self.stdout.flush()
                self._watch_loop(
                    paths,
                    interval=interval,
                    deadline=deadline,
                    as_json=as_json,
                    stop_event=stop_event,
                    seen=seen,
                    index_after=index_after,
                    events=events,
                    settling=settling,
                )
        except KeyboardInterrupt:
            return

    def _watch_loop(
        self,
        paths: list[Path],
        *,
        interval: float,
        deadline: float | None,
        as_json: bool,
        stop_event: Any,
        seen: dict[Path, Any],
        index_after: float,
        events: _FileEvents,
        settling: dict[int, float],
    ) -> None:
        last_full_scan = time.monotonic()
        while stop_event is None or not stop_event.is_set():
            pause = interval
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                pause = min(interval, left)
            # A file event ends the pause early: then only the files reported are looked at,
            # and the whole tree once `interval` has passed since it last was. (Short waits, so
            # that a stop request is seen within a quarter of a second.)
            woke = events.flag.wait(min(pause, 0.25))
            due = time.monotonic() - last_full_scan >= interval
            if not woke and not due:
                continue
            reported = events.take()
            if due:
                candidates = find_session_files(paths)
                last_full_scan = time.monotonic()
            else:
                candidates = _reported_files(reported, paths)
            changed = []
            for file in candidates:
                state = _stat(file)
                if seen.get(file) != state:
                    seen[file] = state
                    if state is not None:  # gone between listing and stat: nothing to read
                        changed.append(file)
            # Entries appended by jobs (compactions, summaries) become searchable here too.
            index_pending()
            now = time.monotonic()
            for pk, changed_at in list(settling.items()):
                if now - changed_at >= index_after:
                    del settling[pk]
                    tree_index_refresh(session_id=pk)
            if not changed:
                continue
            # Not the appends: they are Pi writing as it runs, one per sync, not a person.
            audit = _audit("import_sessions --watch", (Status.NEW, Status.REVISED))
            results = [import_session_file(path=f, within=audit) for f in changed]
            for result in results:
                if result.session is not None and result.status in _GREW:
                    settling[result.session.pk] = time.monotonic()
            if as_json:
                self.stdout.write(json.dumps(results_json(results, 0.0), ensure_ascii=False))
            else:
                for result in results:
                    if result.status != Status.UNCHANGED:
                        self.stdout.write(
                            f"{time.strftime('%H:%M:%S')} {result.status:<9} {result.path}"
                            f"  +{result.new_entries} entries"
                        )
            self.stdout.flush()


_GREW = (Status.NEW, Status.APPENDED, Status.REVISED)


def results_json(results: list[ImportResult], seconds: float) -> dict[str, Any]:
    """The object `--json` prints (the contract in README.md, "Your own sessions")."""
    return {
        "files": [r.as_json() for r in results],
        "bytes": sum(r.bytes_read for r in results),
        "seconds": round(seconds, 3),
    }


class _FileEvents(FileSystemEventHandler):
    """Collects the paths the operating system reports as changed, and wakes the watch loop."""

    def __init__(self) -> None:
        self.flag = threading.Event()
        self._lock = threading.Lock()
        self._paths: set[str] = set()

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return  # reads, ours included
        with self._lock:
            for path in (event.src_path, getattr(event, "dest_path", "")):
                if path:
                    self._paths.add(path if isinstance(path, str) else path.decode())
        self.flag.set()

    def take(self) -> set[str]:
        with self._lock:
            paths, self._paths = self._paths, set()
        self.flag.clear()
        return paths


@contextlib.contextmanager
def _file_events(paths: list[Path]) -> Iterator[_FileEvents]:
    """File events below `paths` (folders recursively; a file's folder for a file). Where the
    platform cannot report changes, none arrive and the watch relies on its periodic scan."""
    events = _FileEvents()
    observer = Observer()
    try:
        for folder in {p if p.is_dir() else p.parent for p in paths}:
            observer.schedule(events, str(folder), recursive=True)
        observer.start()
    except OSError:  # e.g. inotify's watch limit reached: polling still works
        yield events
        return
    try:
        yield events
    finally:
        observer.stop()
        observer.join(timeout=5)


def _reported_files(reported: set[str], paths: list[Path]) -> list[Path]:
    """The session files among reported paths: *.jsonl below a watched folder, or a watched
    file; a reported folder (created, moved in) is searched like a watched one."""
    folders = [p for p in paths if p.is_dir()]
    files = {p for p in paths if not p.is_dir()}
    found: list[Path] = []
    for raw in sorted(reported):
        path = Path(raw)
        if path in files:
            found.append(path)
        elif any(path.is_relative_to(folder) for folder in folders):
            if path.suffix == ".jsonl":
                found.append(path)
            elif path.is_dir():
                found.extend(find_session_files([path]))
    return list(dict.fromkeys(found))


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns
