"""How the inspector names the Pi release that wrote a turn (``release_detect``'s finding): the
candidate range, the release used and why in one line, and, only where the candidates would have
sent different bytes, a note saying so. Worded here, not in templates.

    view = ReleaseView.of(request.choice.release)
    view.range_label, view.used_label, view.differ_note
"""

from __future__ import annotations

from dataclasses import dataclass

from contextlab.pi.dialects.release_detect import (
    ReleaseFinding,
    alike_groups,
    release_span,
    request_differences,
)

__all__ = ["ReleaseView"]

# More candidates than this get their count beside the range (the title lists them all).
LISTED = 4


@dataclass(frozen=True)
class ReleaseView:
    candidates: tuple[str, ...]
    chosen: str
    why: str

    @classmethod
    def of(cls, finding: ReleaseFinding) -> ReleaseView:
        return cls(finding.candidates, finding.chosen, finding.why)

    @property
    def range_label(self) -> str:
        """``Pi 0.80.3–0.80.10`` (the one release, or the range and its count when many)."""
        span = release_span(self.candidates)
        if len(self.candidates) > LISTED:
            return f"Pi {span} ({len(self.candidates)} releases)"
        return f"Pi {span}"

    @property
    def candidates_title(self) -> str:
        return ", ".join(self.candidates)

    @property
    def how(self) -> str:
        """Why this release was used: the finding's first clause (who chose it, or how it was
        picked among the candidates)."""
        return self.why.split("; ", 1)[0]

    @property
    def used_label(self) -> str:
        return f"Pi {self.chosen} used: {self.how}"

    @property
    def groups(self) -> list[tuple[str, ...]]:
        return alike_groups(self.candidates)

    @property
    def sends_differently(self) -> bool:
        return len(self.groups) > 1

    @property
    def differ_note(self) -> str:
        """Said only where the candidates would not all have sent the same bytes."""
        groups = self.groups
        if len(groups) < 2:
            return ""
        named = ", ".join(release_span(g) for g in groups)
        return (
            f"These releases would not all have sent the same bytes: {named} build"
            f" {len(groups)} different requests. This page shows what Pi {self.chosen} would"
            " have sent; choose the release in the project's resource profile if another"
            " wrote this session."
        )

    @property
    def differences(self) -> list[tuple[str, str]]:
        """For each other group of candidates: its range and what its requests differ in from
        the release used (the table's entries, e.g. ``PROMPT.date_prefix``, ``TOOL.edit``)."""
        out = []
        for group in self.groups:
            if self.chosen in group:
                continue
            keys = request_differences(group[0], self.chosen)
            out.append((f"Pi {release_span(group)}", ", ".join(keys) or "nothing in the table"))
        return out
