"""contextlab.db: a json column read as the text PostgreSQL stored."""

from __future__ import annotations

import io
import uuid

import orjson
import pytest

from contextlab.db import json_texts
from contextlab.library.importer import import_session_file
from contextlab.library.models import Entry
from tests.library.conftest import chain, header, lines, message

pytestmark = pytest.mark.django_db


def test_json_texts_reads_each_entry_as_its_stored_text_key_order_and_all(blob_dir):
    # Keys out of jsonb's order, and text beyond ASCII: both must come back as stored.
    odd = message("odd00001", "e0000001", "user", "café ☕ 𝄞", zeta=1, alpha={"b": 2, "a": 1})
    data = lines(header(id=str(uuid.uuid4())), *chain(2), odd)
    result = import_session_file(fileobj=io.BytesIO(data), name=f"{uuid.uuid4()}.jsonl")
    assert result.session is not None
    rows = Entry.objects.for_session(result.session)
    texts = json_texts(rows, "entry_id", "data")
    stored = dict(rows.values_list("entry_id", "data"))
    assert [entry_id for entry_id, _ in texts] == list(rows.values_list("entry_id", flat=True))
    for entry_id, raw in texts:
        assert isinstance(raw, bytes)  # PostgreSQL: undecoded, for orjson
        assert orjson.loads(raw) == stored[entry_id]
    read = orjson.loads(dict(texts)["odd00001"])
    assert list(read) == list(odd) and list(read["alpha"]) == ["b", "a"]  # key order kept
    assert read["message"]["content"][0]["text"] == "café ☕ 𝄞"
