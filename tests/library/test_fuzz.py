"""Fuzzing (hypothesis, derandomized: the same examples on every run and in CI) of the JSONL
importer and of Pi's truncation functions: no crash, and every line the importer does not store
is reported with its line number and a reason."""

from __future__ import annotations

import io

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextlab.library.importer import Status, import_session_file
from contextlab.library.models import Entry
from contextlab.pi.jsutil import json_stringify
from contextlab.pi.truncate import truncate_head, truncate_line, truncate_tail
from tests.library.conftest import header

FUZZ = settings(
    max_examples=120,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

_ids = st.sampled_from(["a1", "b2", "c3", "d4", "", "x" * 150, "e\x00f", "\u2028", "🚀"])
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**64), 2**64),
    st.floats(allow_nan=False),
    st.text(max_size=20),
)
_json = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
_entry = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["message", "compaction", "label", "custom", "nonsense", "", 3]),
        "id": st.one_of(_ids, st.integers()),
        "parentId": st.one_of(st.none(), _ids),
        "timestamp": st.sampled_from(["2026-01-02T10:00:01.000Z", "yesterday", 12, None]),
    },
    optional={
        "message": st.fixed_dictionaries(
            {"role": st.sampled_from(["user", "assistant", "toolResult", "bash"])},
            optional={
                "content": st.one_of(
                    st.text(max_size=40),
                    st.lists(
                        st.fixed_dictionaries(
                            {"type": st.sampled_from(["text", "image", "toolCall", "thinking"])},
                            optional={"text": st.text(max_size=30), "arguments": _json},
                        ),
                        max_size=3,
                    ),
                )
            },
        ),
        "summary": st.text(max_size=30),
        "firstKeptEntryId": _ids,
        "extra": _json,
    },
)


def _line(value: object) -> bytes:
    return json_stringify(value).encode("utf-8", "surrogatepass")


_lines = st.lists(
    st.one_of(
        _entry.map(_line),
        _json.map(_line),  # valid JSON that is not an entry
        st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")),  # garbage, bad UTF-8
        _entry.map(lambda e: _line(e)[: max(1, len(_line(e)) // 2)]),  # cut in the middle
        st.just(b"   "),
        st.just(b"[" * 300 + b"]" * 300),  # deep nesting
    ),
    max_size=12,
)


@pytest.mark.django_db
@FUZZ
@given(
    with_header=st.booleans(),
    body=_lines,
    newline_at_end=st.booleans(),
)
def test_the_importer_never_crashes_and_reports_every_line_it_does_not_store(
    with_header, body, newline_at_end
):
    rows = ([_line(header())] if with_header else []) + body
    data = b"\n".join(rows) + (b"\n" if newline_at_end and rows else b"")
    with transaction.atomic():
        result = import_session_file(fileobj=io.BytesIO(data), name="fuzz.jsonl")
        assert result.status in (Status.NEW, Status.FAILED)
        reported = {p.line for p in result.problems}
        if result.session is None:
            # Nothing stored: the whole file is refused, with a reason (line 0: the file).
            assert result.status == Status.FAILED and result.problems
            transaction.set_rollback(True)
            return
        stored = set()
        if result.session is not None:
            stored = set(
                Entry.objects.filter(session=result.session).values_list("line_no", flat=True)
            )
        for number, raw in enumerate(data.split(b"\n"), start=1):
            if not raw.strip():
                continue
            is_header = with_header and number == 1
            assert is_header or number in stored or number in reported, (
                f"line {number} neither stored nor reported: {raw[:80]!r}"
            )
        transaction.set_rollback(True)


_text = st.text(
    alphabet=st.sampled_from(["a", "é", "😀", "\n", "\r", "\x00", "\ud800", " ", "\t"]),
    max_size=300,
)


@FUZZ
@given(text=_text, max_lines=st.integers(1, 40), max_bytes=st.integers(1, 400))
def test_the_truncation_functions_never_crash_and_keep_their_limits(text, max_lines, max_bytes):
    head = truncate_head(text, max_lines=max_lines, max_bytes=max_bytes)
    tail = truncate_tail(text, max_lines=max_lines, max_bytes=max_bytes)
    for result in (head, tail):
        assert result.output_lines <= max_lines
        assert result.output_bytes <= max_bytes
        assert result.truncated == (result.content != text)
    assert text.startswith(head.content)
    if not tail.last_line_partial:
        # Pi counts no line after a final newline: the kept end may stop before it.
        assert text.endswith(tail.content) or text.removesuffix("\n").endswith(tail.content)
    line = truncate_line(text, max_bytes)
    assert line.was_truncated == (line.text != text)
