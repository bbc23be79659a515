"""CONTEXTLAB_MAX_UPLOAD_BYTES: a browser upload over the limit is refused with a clear message
while it streams in; the other files of the same upload go through."""

from __future__ import annotations

import uuid

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from contextlab.library.models import Session
from tests.library.conftest import chain, header, lines

pytestmark = pytest.mark.django_db


def test_an_upload_over_the_size_limit_is_refused_clearly_and_the_others_are_imported(
    owner_client, settings
):
    settings.CONTEXTLAB_MAX_UPLOAD_BYTES = 50_000
    small = lines(header(id=str(uuid.uuid4())), *chain(3))
    big = lines(header(id=str(uuid.uuid4())), *chain(600))
    assert len(small) < 50_000 < len(big)
    response = owner_client.post(
        "/upload/",
        {
            "files": [
                SimpleUploadedFile("big.jsonl", big),
                SimpleUploadedFile("small.jsonl", small),
            ]
        },
        headers={"HX-Request": "true"},
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert "big.jsonl" in page and "larger than the upload limit of 48.8\xa0KB" in page
    assert "CONTEXTLAB_MAX_UPLOAD_BYTES" in page and "nothing was stored" in page
    assert Session.objects.count() == 1  # the small one
