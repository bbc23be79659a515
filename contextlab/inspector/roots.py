"""The folders of this server the dashboard may read (settings.CONTEXTLAB_SERVER_ROOTS).

A session's cwd, a resource profile's agent dir and home come from users (an uploaded file's
header, a form); without this, `"cwd": "/"` or another team's checkout would show that folder's
files on the prompt tab. Every path is resolved (symlinks, "..") before it is compared with the
resolved roots, and a path outside them behaves exactly like a missing one, so that no answer
tells which server paths exist.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from django.conf import settings

from contextlab.pi.resources import RealFileSystem


def server_roots() -> list[str]:
    return [os.path.realpath(root) for root in settings.CONTEXTLAB_SERVER_ROOTS]


def _inside(real: str, roots: Iterable[str]) -> bool:
    return any(real == root or real.startswith(root.rstrip("/") + "/") for root in roots)


def inside_server_roots(path: str | None) -> bool:
    """Whether `path`, once symlinks and ".." are resolved, lies under a configured root."""
    if not path or not os.path.isabs(path) or "\x00" in path:
        return False
    roots = server_roots()
    return bool(roots) and _inside(os.path.realpath(path), roots)


class RootedFileSystem(RealFileSystem):
    """The local disk as Pi's resource discovery reads it, limited to the server roots: a
    path outside them (directly, through "..", or through a symlink) does not exist."""

    def __init__(self, roots: list[str] | None = None) -> None:
        self.roots = server_roots() if roots is None else roots

    def _allowed(self, path: str) -> bool:
        return "\x00" not in path and _inside(os.path.realpath(path), self.roots)

    def exists(self, path: str) -> bool:
        return self._allowed(path) and super().exists(path)

    def is_dir(self, path: str) -> bool:
        return self._allowed(path) and super().is_dir(path)

    def is_file(self, path: str) -> bool:
        return self._allowed(path) and super().is_file(path)

    def listdir(self, path: str) -> list[str]:
        if not self._allowed(path):
            raise FileNotFoundError(path)
        return super().listdir(path)

    def read_text(self, path: str) -> str:
        if not self._allowed(path):
            raise FileNotFoundError(path)
        return super().read_text(path)

    def realpath(self, path: str) -> str:
        return super().realpath(path) if self._allowed(path) else path
