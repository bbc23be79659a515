"""Which Pi release wrote a turn, on the session page: the candidate range told from the file, the
release used and why, a note where the candidates would have sent different bytes, and a
project's resource profile choosing the release (as ``--pi-version`` does)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from contextlab.inspector.chart import context_growth
from contextlab.inspector.models import ResourceProfile
from contextlab.inspector.releases import ReleaseView
from contextlab.inspector.selectors import clear_cache, session_index
from contextlab.pi.dialects.release_detect import ReleaseFinding, alike_groups
from contextlab.review.models import AuditEvent, ProjectMembership
from tests.conftest import CORPUS
from tests.inspector.release_pages import api_context, inspector_page, text_by_testid

pytestmark = pytest.mark.django_db

CORPUS_0803 = CORPUS.parent / "releases" / "corpus-0.80.3"


@pytest.fixture(autouse=True)
def _fresh_index(blob_dir):
    clear_cache()
    yield
    clear_cache()


def test_a_turn_several_releases_fit_shows_the_range_the_one_used_and_that_they_differ(
    owner_client, owner, import_corpus
):
    session, _ = import_corpus("compaction", CORPUS_0803)
    leaf = session.leaf_entry_id
    page = inspector_page(owner_client, session, leaf)
    assert 'id="inspector"' in page and f'data-entry-id="{leaf}"' in page
    assert text_by_testid(page, "pi-release-range") == "Pi 0.80.3–0.80.10"
    assert 'title="0.80.3, 0.80.6, 0.80.7, 0.80.10"' in page
    used = text_by_testid(page, "pi-release-used")
    assert used.startswith("Pi 0.80.10 used: 0.80.10, of the most candidates alike")
    differ = text_by_testid(page, "pi-release-differ")
    assert "would not all have sent the same bytes" in differ
    assert "0.80.3, 0.80.6, 0.80.7–0.80.10 build 3 different requests" in differ
    assert "what Pi 0.80.10 would have sent" in differ
    # And what differs: the release table's entries whose values differ from 0.80.10's.
    differences = re.search(r'data-testid="pi-release-differences">(.*?)</ul>', page, re.S)
    assert differences
    items = [re.sub(r"<[^>]+>", "", li) for li in re.findall(r"<li>(.*?)</li>", differences[1])]
    assert items == [
        "Pi 0.80.3 differs from Pi 0.80.10 in PROMPT.date_prefix, TOOL.edit,"
        " pi-ai 0.80.3 vs 0.80.6",
        "Pi 0.80.6 differs from Pi 0.80.10 in PROMPT.date_prefix",
    ]
    # The API's JSON says the same.
    api = api_context(owner_client, owner, session, leaf)
    assert api["piRelease"]["candidates"] == ["0.80.3", "0.80.6", "0.80.7", "0.80.10"]
    assert api["piRelease"]["chosen"] == "0.80.10"


def test_the_profile_chooses_the_release_the_turn_is_built_with(owner_client, owner, import_corpus):
    session, _ = import_corpus("compaction", CORPUS_0803)
    ProjectMembership.objects.create(project=session.project, user=owner, role="owner")
    leaf = session.leaf_entry_id
    page = inspector_page(owner_client, session, leaf, "prompt")
    assert '<optgroup label="One release (as --pi-version)"><option value="0.70.0">' in page
    assert '<option value="0.80.3">Pi 0.80.3</option>' in page
    response = owner_client.post(
        reverse("inspector:profile", args=[session.project.pk]),
        {"dialect": "0.80.3", "tools_text": "", "next": "/"},
    )
    assert response.status_code == 302
    assert ResourceProfile.objects.get(project=session.project).dialect == "0.80.3"
    assert AuditEvent.objects.filter(verb="profile.update").latest("pk").data["dialect"] == (
        "0.80.3"
    )
    page = inspector_page(owner_client, session, leaf)
    assert text_by_testid(page, "pi-release-range") == "Pi 0.80.3–0.80.10"
    assert text_by_testid(page, "pi-release-used") == (
        "Pi 0.80.3 used: chosen (the project's resource profile)"
    )
    assert "what Pi 0.80.3 would have sent" in text_by_testid(page, "pi-release-differ")
    api = api_context(owner_client, owner, session, leaf)
    assert api["piRelease"]["chosen"] == "0.80.3"
    assert api["piRelease"]["why"].startswith("chosen (the project's resource profile);")
    # The chart reads the turns in the release's dialect too.
    growth = context_growth(session, session_index(session))
    assert {p["dialect"] for p in growth["points"]} == {"0.80"}


def test_a_release_not_in_the_table_is_refused(owner_client, owner, import_corpus):
    session, _ = import_corpus("compaction", CORPUS_0803)
    ProjectMembership.objects.create(project=session.project, user=owner, role="owner")
    owner_client.post(
        reverse("inspector:profile", args=[session.project.pk]),
        {"dialect": "0.80.4", "tools_text": "", "next": "/"},
    )
    assert not ResourceProfile.objects.filter(project=session.project, dialect="0.80.4").exists()


def test_candidates_that_send_alike_get_no_note_and_many_are_named_by_range():
    alike = ReleaseView.of(ReleaseFinding(("0.80.7", "0.80.10"), "0.80.10", "x; y"))
    assert alike_groups(alike.candidates) == [("0.80.7", "0.80.10")]
    assert alike.differ_note == "" and alike.used_label == "Pi 0.80.10 used: x"
    assert alike.differences == []
    many = ReleaseView.of(
        ReleaseFinding(("0.79.7", "0.79.8", "0.79.9", "0.79.10", "0.80.2"), "0.80.2", "z")
    )
    assert many.range_label == "Pi 0.79.7–0.80.2 (5 releases)"


def test_a_turn_only_one_release_fits_says_so_rather_than_assumed(
    owner_client, owner, import_corpus
):
    # Pi 1.6.0's session whose saved declarations only 1.6.0 writes: nothing is assumed.
    session, _ = import_corpus("patches2", CORPUS.parent / "corpus-1.6.0")
    page = inspector_page(owner_client, session, session.leaf_entry_id)
    assert text_by_testid(page, "pi-release-range") == "Pi 1.6.0"
    used = text_by_testid(page, "pi-release-used")
    assert used.startswith("Pi 1.6.0 used: 1.6.0, the only release that fits"), used
    assert "assumed" not in used
