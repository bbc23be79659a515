"""The context growth chart's labels never overlap, at a phone's width (390 px) and a desktop's
(1440 px), on a session with many requests and compactions close together: the compaction labels
(HTML over the plot) and the axes' tick labels (drawn by uPlot, measured here with the font it
draws them in) are measured in the browser and no two boxes intersect."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from contextlab.library.importer import import_session_file
from tests.conftest import login
from tests.generated import large_session_generator

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _generated(tmp_path):  # type: ignore[no-untyped-def]
    """About 1,450 requests on the active path with 12 compactions, some a few requests apart."""
    return large_session_generator().write_session(
        tmp_path / "gen.jsonl",
        entries=3000,
        target_bytes=1024 * 1024,
        branches=4,
        compactions=12,
        seed=5,
        session_id="many-turns",
        cwd="/srv/gen",
    )


# Every label's box in page pixels: the compaction labels, the legend's entries, and each axis'
# tick labels where uPlot draws them (the x axis centres its labels under the tick, the y axis
# ends them left of the plot).
LABEL_BOXES = """() => {
  const holder = document.querySelector('#growth-chart');
  const u = holder.chart;
  const over = u.over.getBoundingClientRect();
  const boxes = [];
  const add = (kind, text, left, top, right, bottom) =>
    boxes.push({kind, text, left, top, right, bottom});
  for (const el of holder.querySelectorAll('.chart-mark, .u-legend .u-series')) {
    const b = el.getBoundingClientRect();
    add(el.classList.contains('chart-mark') ? 'mark' : 'legend', el.textContent,
        b.left, b.top, b.right, b.bottom);
  }
  const ctx = document.createElement('canvas').getContext('2d');
  u.axes.forEach((axis, i) => {
    ctx.font = Array.isArray(axis.font) ? axis.font[0] : axis.font;
    const size = parseFloat(ctx.font) / devicePixelRatio || 12;
    ctx.font = ctx.font.replace(/^[\\d.]+px/, size + 'px');
    (axis._splits || []).forEach((split, n) => {
      const text = axis._values[n];
      if (text === null || text === undefined || text === '') return;
      const w = ctx.measureText(String(text)).width;
      const pos = u.valToPos(split, axis.scale);
      if (i === 0) {
        const x = over.left + pos, top = over.bottom + 5;
        add('x', String(text), x - w / 2, top, x + w / 2, top + size);
      } else {
        const y = over.top + pos;
        add('y', String(text), over.left - 10 - w, y - size / 2, over.left - 10, y + size / 2);
      }
    });
  });
  return {boxes, over: {left: over.left, right: over.right, top: over.top, bottom: over.bottom},
          shown: holder.querySelector('.chart-marks').getAttribute('data-shown')};
}"""


def overlaps(boxes: list[dict[str, Any]]) -> list[str]:
    found = []
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            if (
                a["left"] < b["right"]
                and b["left"] < a["right"]
                and a["top"] < b["bottom"]
                and b["top"] < a["bottom"]
            ):
                found.append(f"{a['kind']} {a['text']!r} and {b['kind']} {b['text']!r}")
    return found


def test_no_two_chart_labels_overlap_on_a_session_with_many_requests(
    wpage, live_server, owner, blob_dir, tmp_path
):
    session = import_session_file(path=_generated(tmp_path), index_search=False).session
    assert session is not None
    login(wpage, live_server.url, owner.username)
    wpage.goto(f"{live_server.url}{reverse('inspector:chart', args=[session.pk])}")
    wpage.wait_for_selector("#growth-chart .chart-marks")
    width = wpage.viewport_size["width"]
    measured = wpage.evaluate(LABEL_BOXES)
    boxes = measured["boxes"]
    kinds = {box["kind"] for box in boxes}
    assert {"mark", "x", "y", "legend"} <= kinds, kinds
    assert not overlaps(boxes), f"at {width}px: {overlaps(boxes)[:8]}"
    # The compaction labels stay over the plot (none cut off at its edges or the screen's).
    over = measured["over"]
    for box in boxes:
        if box["kind"] == "mark":
            assert over["left"] - 0.5 <= box["left"] and box["right"] <= over["right"] + 0.5, box
            assert box["right"] <= width, box
    # Some labels had no room: every compaction is still named under the chart, with its request.
    shown, total = (int(n) for n in measured["shown"].split(" of "))
    assert total == 12 and 1 <= shown <= total, measured["shown"]
    listed = wpage.locator("#chart-compactions li")
    assert listed.count() == total
    assert "request #" in listed.first.inner_text()
    if width < 800:
        assert shown < total  # the phone's plot has no room for all twelve
