"""An upload handler that refuses session files over CONTEXTLAB_MAX_UPLOAD_BYTES as they stream in.

Django would otherwise write the whole file to a temporary file before the view sees it (and the
CSRF check reads the body before any view runs). Over the limit, the rest of that file is
discarded as it arrives and its name is noted on the request, so the upload view reports it
clearly; the other files of the same request go through.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, SkipFile
from django.template.defaultfilters import filesizeformat


class SizeLimitedUploadHandler(FileUploadHandler):
    def new_file(self, field_name: str, file_name: str, *args: Any, **kwargs: Any) -> None:
        super().new_file(field_name, file_name, *args, **kwargs)
        self.received = 0

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        self.received += len(raw_data)
        if self.received > settings.CONTEXTLAB_MAX_UPLOAD_BYTES:
            too_large = getattr(self.request, "too_large_uploads", None)
            if too_large is None:
                too_large = self.request.too_large_uploads = []  # type: ignore[union-attr]  # Django gives upload handlers the request
            too_large.append(self.file_name)
            raise SkipFile()
        return raw_data  # the next handler (memory or temporary file) stores it

    def file_complete(self, file_size: int) -> None:
        return None


def too_large_message() -> str:
    limit = filesizeformat(settings.CONTEXTLAB_MAX_UPLOAD_BYTES)
    return (
        f"larger than the upload limit of {limit} (CONTEXTLAB_MAX_UPLOAD_BYTES); "
        "nothing was stored. Import it on the server with manage.py import_sessions."
    )
