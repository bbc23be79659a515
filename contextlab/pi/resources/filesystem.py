"""The filesystem Pi reads (the real disk, or uploaded files under their original paths).
Node's POSIX ``path`` functions are in ``contextlab.pi.jsutil``."""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Mapping
from typing import Any, Protocol

from contextlab.pi.jsutil import path_join, path_normalize
from contextlab.pi.resources.results import ResourceError

# Filesystems


class FileSystem(Protocol):
    def exists(self, path: str) -> bool: ...
    def is_dir(self, path: str) -> bool: ...
    def is_file(self, path: str) -> bool: ...
    def listdir(self, path: str) -> list[str]: ...
    def read_text(self, path: str) -> str: ...
    def realpath(self, path: str) -> str: ...


def _utf8_key(name: str) -> bytes:
    return name.encode("utf-8", "surrogateescape")


class RealFileSystem:
    """The local disk, with Node's semantics where Pi depends on them."""

    def exists(self, path: str) -> bool:
        return os.path.exists(path)  # existsSync follows symlinks too

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def is_file(self, path: str) -> bool:
        return os.path.isfile(path)

    def listdir(self, path: str) -> list[str]:
        # libuv's scandir sorts names with strcmp, so Node's readdirSync order is byte order.
        return sorted(os.listdir(path), key=_utf8_key)

    def read_text(self, path: str) -> str:
        # readFileSync(path, "utf-8") keeps a BOM and turns invalid bytes into U+FFFD.
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")

    def realpath(self, path: str) -> str:
        # canonicalizePath: realpathSync, or the path unchanged when that fails.
        try:
            return os.path.realpath(path, strict=True)
        except OSError:
            return path


class MappingFileSystem:
    """Files given as ``{absolute path: content}``; folders are implied by the paths."""

    def __init__(self, files: Mapping[str, str]) -> None:
        self.files: dict[str, str] = {}
        self.dirs: set[str] = {"/"}
        # Keys that cannot be placed on a POSIX tree (C:\\..., relative paths): kept aside so
        # discovery can say they were not used instead of failing on them.
        self.skipped: list[str] = []
        for raw, content in files.items():
            if is_foreign_path(str(raw)):
                self.skipped.append(str(raw))
                continue
            path = path_normalize(str(raw))
            self.files[path] = content
            parent = posixpath.dirname(path)
            while parent not in self.dirs:
                self.dirs.add(parent)
                parent = posixpath.dirname(parent)

    def exists(self, path: str) -> bool:
        return path in self.files or path in self.dirs

    def is_dir(self, path: str) -> bool:
        return path in self.dirs

    def is_file(self, path: str) -> bool:
        return path in self.files

    def listdir(self, path: str) -> list[str]:
        if path not in self.dirs:
            raise FileNotFoundError(path)
        prefix = path.rstrip("/") + "/"
        names = {
            p[len(prefix) :].split("/", 1)[0]
            for p in (*self.files, *self.dirs)
            if p.startswith(prefix) and p != prefix
        }
        return sorted(names, key=_utf8_key)

    def read_text(self, path: str) -> str:
        if path not in self.files:
            raise IsADirectoryError(path) if path in self.dirs else FileNotFoundError(path)
        return self.files[path]

    def realpath(self, path: str) -> str:
        return path


def as_file_system(fs: Any) -> FileSystem:
    if fs is None:
        return RealFileSystem()
    if isinstance(fs, Mapping):
        return MappingFileSystem(fs)
    for method in ("exists", "is_dir", "is_file", "listdir", "read_text", "realpath"):
        if not callable(getattr(fs, method, None)):
            raise ResourceError(f"fs object lacks {method}()")
    checked: FileSystem = fs
    return checked


# ---------------------------------------------------------------------------------------------
# Node's path module (POSIX)


def expand_home(path: str, home: str) -> str:
    """normalizePath's tilde expansion (Pi expands ``~`` and ``~/...`` only)."""
    if path == "~":
        return home
    if path.startswith("~/"):
        return path_join(home, path[2:])
    return path


_WINDOWS_PATH = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")


def is_foreign_path(path: str) -> bool:
    """True for paths that name nothing on this POSIX server (``C:\\x``, ``\\\\server``)."""
    return bool(_WINDOWS_PATH.match(path)) or not path.startswith("/")
