"""Compare in bounded time: messages paired by identity, line diffs of bounded cost, the result
computed once per (revision, pair) for every web process, a repeat answered 304, and the work
dropped when the client is gone."""

from __future__ import annotations

import json
import os
import random
import re
import socket
import subprocess
import sys
import time

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from contextlab import budgets
from contextlab.inspector import linediff, views
from contextlab.inspector.requests import TOO_DIFFERENT, compare_requests
from contextlab.inspector.selectors import clear_cache, session_index
from contextlab.library.importer import import_session_file
from tests.conftest import REPO
from tests.inspector.sessions import _assistant, _user, write_session

LINES = 1500


def _url(session, **params):
    from urllib.parse import urlencode

    return reverse("inspector:compare", args=[session.pk]) + "?" + urlencode(params)


def _siblings_session(tmp_path, first: str, second: str, name: str = "siblings"):
    """A question, its answer, then two sibling user messages (two branches from the answer)."""
    lines = _siblings_lines(first, second, name)
    path = write_session(tmp_path, lines, name=f"{name}.jsonl")
    session = import_session_file(path=path, index_search=False).session
    assert session is not None
    return session


def _siblings_lines(first: str, second: str, name: str) -> list[dict]:
    header = {
        "type": "session",
        "version": 3,
        "id": f"0193a1b2-0000-7000-8000-{abs(hash(name)) % 10**12:012d}",
        "timestamp": "2025-11-20T10:00:00.000Z",
        "cwd": "/home/ann/proj",
    }

    def entry(entry_id, parent, message, n):
        return {
            "type": "message",
            "id": entry_id,
            "parentId": parent,
            "timestamp": f"2025-11-20T10:00:{n:02d}.000Z",
            "message": message,
        }

    lines = [
        header,
        {
            "type": "model_change",
            "id": "m0000001",
            "parentId": None,
            "timestamp": "2025-11-20T10:00:01.000Z",
            "provider": "anthropic",
            "modelId": "claude-sonnet-4-5",
        },
        entry("u0000001", "m0000001", _user("Here is the log.", 2), 2),
        entry("a0000001", "u0000001", _assistant([{"type": "text", "text": "Send it."}], 3), 3),
        entry("s0000001", "a0000001", _user(first, 4), 4),
        entry("s0000002", "a0000001", _user(second, 5), 5),
    ]
    return lines


def _log(n: int, suffix: str = "") -> str:
    lines = (f"2025-11-20 10:{i % 60:02d} worker {i} finished step {i}{suffix}" for i in range(n))
    return "\n".join(lines)


def _one_line_changed(n: int, line: int) -> tuple[str, str]:
    before = _log(n)
    return before, before.replace(f"worker {line} finished", f"worker {line} stopped")


def _long_session_lines(pairs: int) -> list[dict]:
    """A session of ``pairs`` questions, each answered, on one branch."""
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": "0193a1b2-0000-7000-8000-00000000a11d",
            "timestamp": "2025-11-20T10:00:00.000Z",
            "cwd": "/home/ann/proj",
        }
    ]
    parent = None
    for n in range(pairs):
        for role, entry_id in (("user", f"u{n:07d}"), ("assistant", f"a{n:07d}")):
            stamp = 2 * n + (role == "assistant")
            message = (
                _user(f"question {n}", stamp)
                if role == "user"
                else _assistant([{"type": "text", "text": f"answer {n}"}], stamp)
            )
            lines.append(
                {
                    "type": "message",
                    "id": entry_id,
                    "parentId": parent,
                    "timestamp": f"2025-11-20T10:{stamp // 60:02d}:{stamp % 60:02d}.000Z",
                    "message": message,
                }
            )
            parent = entry_id
    return lines


# --- the line diff itself (no database) --------------------------------------------------------


def _lcs(a, b):
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for x in range(len(a) - 1, -1, -1):
        for y in range(len(b) - 1, -1, -1):
            table[x][y] = (
                table[x + 1][y + 1] + 1 if a[x] == b[y] else max(table[x + 1][y], table[x][y + 1])
            )
    return table[0][0]


def test_the_line_diff_is_a_shortest_edit_script():
    rng = random.Random(7)
    for _ in range(500):
        a = [rng.choice("abcd") for _ in range(rng.randint(0, 10))]
        b = [rng.choice("abcd") for _ in range(rng.randint(0, 10))]
        diff = linediff.diff_lines("\n".join(a), "\n".join(b), context=100)
        assert not diff.replaced
        left = [text for op, text in diff.lines if op in ("eq", "del")]
        right = [text for op, text in diff.lines if op in ("eq", "ins")]
        assert left == a and right == b
        assert sum(1 for op, _ in diff.lines if op == "eq") == _lcs(a, b)


def test_a_few_changes_in_long_texts_show_only_around_the_changes():
    before = _log(LINES)
    after = before.replace("worker 700 finished", "worker 700 FAILED")
    diff = linediff.diff_lines(before, after)
    assert [op for op, _ in diff.lines].count("del") == 1 and diff.added == 1
    assert ("del", "2025-11-20 10:40 worker 700 finished step 700") in diff.lines
    folds = [text for op, text in diff.lines if op == "fold"]
    assert folds == ["⋯ 697 unchanged lines", "⋯ 796 unchanged lines"]
    assert len(diff.lines) < 12


def test_texts_too_different_are_replaced_after_a_bounded_amount_of_work():
    # Every line differs: a shortest script has 3,000 edits, far past the budget.
    diff = linediff.diff_lines(_log(LINES), _log(LINES, suffix=" (retried)"))
    assert diff.replaced and diff.lines == []
    assert diff.work <= linediff.MAX_WORK + 2 * LINES


# --- the compare page ------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_crafted_compare_of_two_1500_line_siblings_answers_within_its_budget_with_a_note(
    owner_client, tmp_path, blob_dir
):
    session = _siblings_session(tmp_path, _log(LINES), _log(LINES, suffix=" (retried)"))
    started = time.monotonic()
    response = owner_client.get(_url(session, a="s0000001", b="s0000002"))
    elapsed = time.monotonic() - started
    html = response.content.decode()
    assert response.status_code == 200
    # The two siblings are one message edited: paired, and shown whole as replaced.
    assert re.findall(r'data-kind="([a-z-]+)"', html) == ["same-run", "changed"]
    assert html.count('data-diff="replaced"') == 2
    assert TOO_DIFFERENT in html
    note = re.search(r'<p id="compare-note"[^>]*>(.*?)</p>', html, re.S).group(1)
    assert "1 changed message is too different" in note and "full texts one click away" in note
    # The full texts: the message bodies of both entries in their requests, one click away.
    for side, entry in (("a", "s0000001"), ("b", "s0000002")):
        link = f"/message/?entry={entry}&amp;leaf={entry}&amp;all=1"
        assert link in html, side
    body = owner_client.get(
        reverse("inspector:message", args=[session.pk]),
        {"entry": "s0000002", "leaf": "s0000002", "all": "1"},
    ).content.decode()
    assert "finished step 1499 (retried)" in body
    # Bounded: the old ndiff took two minutes on this pair; a generous ceiling, not a benchmark.
    assert elapsed < 20


@pytest.mark.django_db
def test_siblings_with_a_few_changed_lines_are_diffed_line_by_line(
    owner_client, tmp_path, blob_dir
):
    before = _log(LINES)
    after = before.replace("worker 12 finished", "worker 12 crashed")
    session = _siblings_session(tmp_path, before, after, name="few")
    html = owner_client.get(_url(session, a="s0000001", b="s0000002")).content.decode()
    assert 'data-diff="replaced"' not in html and 'id="compare-note"' not in html
    assert '<span class="diff-del">2025-11-20 10:12 worker 12 finished step 12</span>' in html
    assert '<span class="diff-ins">2025-11-20 10:12 worker 12 crashed step 12</span>' in html
    assert '<span class="diff-fold">⋯ 1484 unchanged lines</span>' in html


@pytest.mark.django_db
def test_messages_are_paired_by_identity_across_a_compaction(import_corpus):
    session, _ = import_corpus("compaction")
    index = session_index(session)
    # Before the first compaction (the last tool result is the leaf) and after it (the next
    # user question): the compaction kept 79a299b2 and its tool result, summarised the rest.
    comparison = compare_requests(session, index, "1fb2381a", "797d4b81")
    kinds = [(row.kind, row.count) for row in comparison.rows]
    assert comparison.summary["changed"] == 0, kinds
    assert comparison.summary["same"] == 2
    removed = [row.left["entry_id"] for row in comparison.rows if row.kind == "removed"]
    assert removed == ["6c1ec3c5", "f82b4228", "310fa991", "65b49bd3", "f47501d3"]
    added = [row.right["entry_id"] for row in comparison.rows if row.kind == "added"]
    # The summary (its compaction entry) comes first, then what followed the kept messages.
    assert added[0] == "026dc416" and added[1:] == ["80f4ac8f", "0305c695", "7c56bdcf", "797d4b81"]
    same = next(row for row in comparison.rows if row.kind == "same-run")
    assert same.count == 2 and same.left["entry_id"] == "79a299b2"


@pytest.mark.django_db
def test_a_repeat_compare_answers_304_until_the_session_or_its_inputs_change(
    owner_client, owner, outsider, tmp_path, blob_dir
):
    session = _siblings_session(tmp_path, "one", "two")
    session.project.memberships.create(user=owner, role="owner")
    url = _url(session, a="s0000001", b="s0000002")
    first = owner_client.get(url)
    assert first.status_code == 200 and first["ETag"] and first["Last-Modified"]
    assert "no-cache" in first["Cache-Control"]
    again = owner_client.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304 and again.content == b""
    # Another pair is another page.
    other = owner_client.get(_url(session, a="s0000002", b="s0000001"))
    assert other.status_code == 200 and other["ETag"] != first["ETag"]
    # An outsider holding the tag learns nothing: 404, not 304.
    stranger = Client()
    stranger.force_login(outsider)
    assert stranger.get(url, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 404
    # The session changed (a re-import, lines appended): computed again.
    session.save()
    changed = owner_client.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert changed.status_code == 200 and changed["ETag"] != first["ETag"]


@pytest.mark.django_db
def test_a_compare_is_computed_once_and_then_read_from_the_shared_cache(
    owner_client, tmp_path, blob_dir, monkeypatch
):
    session = _siblings_session(tmp_path, *_one_line_changed(50, 7))
    url = _url(session, a="s0000001", b="s0000002")
    first = owner_client.get(url).content.decode()
    # Nothing of this process's own memory (the session's index and its projections) helps:
    # the comparison comes from the cache every web process shares.
    clear_cache()

    def computed_again(*args, **kwargs):
        raise AssertionError("the comparison was computed again")

    monkeypatch.setattr(views, "requests_compare", computed_again)
    second = owner_client.get(url).content.decode()
    page = '<div class="compare" id="compare"'
    assert second[second.index(page) :] == first[first.index(page) :]
    assert 'class="diff-ins"' in second


@pytest.mark.django_db(transaction=True)
def test_a_second_web_process_reuses_the_cached_comparison(owner_client, owner, tmp_path, blob_dir):
    session = _siblings_session(tmp_path, *_one_line_changed(40, 3))
    url = _url(session, a="s0000001", b="s0000002")
    assert owner_client.get(url).status_code == 200
    script = f"""
import json, django
django.setup()
from django.contrib.auth import get_user_model
from django.test import Client
from contextlab.inspector import views

def computed_again(*args, **kwargs):
    raise AssertionError("computed again in the second process")

views.requests_compare = computed_again
client = Client()
client.force_login(get_user_model().objects.get(pk={owner.pk}))
response = client.get({url!r})
html = response.content.decode()
print(json.dumps({{"status": response.status_code, "ins": html.count('class="diff-ins"')}}))
"""
    settings_dict = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": (
            f"postgres://{settings_dict['USER']}:{settings_dict['PASSWORD'] or ''}"
            f"@{settings_dict['HOST']}:{settings_dict['PORT']}/{settings_dict['NAME']}"
        ),
        "CONTEXTLAB_BLOB_DIR": str(blob_dir),
    }
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer == {"status": 200, "ins": 1}


@pytest.mark.django_db
def test_a_compare_whose_client_is_gone_stops_and_keeps_nothing(owner_client, tmp_path, blob_dir):
    session = _siblings_session(tmp_path, *_one_line_changed(30, 2))
    url = _url(session, a="s0000001", b="s0000002")
    ours, theirs = socket.socketpair()
    try:
        assert not budgets.client_gone_socket(ours)
        theirs.close()  # the browser aborted the request (a newer click, a closed tab)
        assert budgets.client_gone_socket(ours)
        response = owner_client.get(url, **{"gunicorn.socket": ours})
        assert response.status_code == 499
    finally:
        ours.close()
    # Nothing was kept: the next request computes it, completely.
    html = owner_client.get(url).content.decode()
    assert html.count('class="diff-ins"') == 1


# --- the entry pickers ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_pickers_offer_the_requests_whose_words_are_typed(
    owner_client, owner, client, outsider, import_corpus
):
    session, _ = import_corpus("branches")
    index = session_index(session)
    points = dict(views._request_points(index))
    licence = [i for i, label in points.items() if "licence" in label.lower()]
    assert licence and len(licence) < len(points)
    page = owner_client.get(_url(session, a=session.leaf_entry_id)).content.decode()
    picker = reverse("inspector:compare_entries", args=[session.pk])
    # Both inputs ask the picker as the user types, and fill the list they share.
    assert page.count(f'hx-get="{picker}" hx-trigger="input changed delay:250ms"') == 2
    assert all(f'<option value="{i}">' in page for i in points)
    found = owner_client.get(picker, {"b": "LICENCE"}).content.decode()
    assert found.startswith('<datalist id="compare-choices">')
    assert re.findall(r'<option value="([^"]+)">', found) == licence
    everything = owner_client.get(picker, {"q": ""}).content.decode()
    assert len(re.findall(r"<option ", everything)) == min(len(points), views.PICKER_MATCHES)
    session.project.memberships.create(user=owner, role="owner")
    client.force_login(outsider)
    assert client.get(picker, {"q": "licence"}).status_code == 404


@pytest.mark.django_db
def test_a_long_run_only_in_one_request_shows_its_two_ends_and_counts_the_rest(
    owner_client, tmp_path, blob_dir
):
    lines = _long_session_lines(40)
    session = import_session_file(path=write_session(tmp_path, lines, name="long.jsonl")).session
    html = owner_client.get(_url(session, a="u0000000", b="u0000039")).content.decode()
    kinds = re.findall(r'data-kind="([a-z-]+)"', html)
    # B holds 78 messages A has not: the first ten, a fold of 58, the last ten.
    assert kinds == ["same-run", *["added"] * 10, "more", *["added"] * 10]
    assert "⋯ 58 more messages only in B" in html
    summary = re.search(r'<p id="compare-summary">(.*?)</p>', html, re.S).group(1)
    assert "<b>78</b> only in B" in summary
