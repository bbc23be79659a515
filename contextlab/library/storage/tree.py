"""Tree bookkeeping while entries stream by: depths, branches, duplicate ids, unknown parents,
parentId cycles."""

from __future__ import annotations

from contextlab.library.models import Entry, SessionRevision
from contextlab.pi.session import Problem


class TreeState:
    """Depths, duplicate ids, unknown parents and cycles, computed while entries stream by.

    For an append the entries already stored are looked up in the database on first use (usually
    just the parent of the first new line).
    """

    def __init__(self, revision: SessionRevision | None) -> None:
        self.revision = revision
        self.parents: dict[str, str | None] = {}
        self.depths: dict[str, int] = {}
        self.has_children: set[str] = set()
        self.first_line: dict[str, int] = {}
        self.pending: list[tuple[str, str, int]] = []  # (id, parent, line) with parent unseen
        self._stored_miss: set[str] = set()

    def _load(self, entry_id: str) -> bool:
        if entry_id in self.depths:
            return True
        if self.revision is None or entry_id in self._stored_miss:
            return False
        row = (
            Entry.objects.filter(revision=self.revision, entry_id=entry_id)
            .order_by("-seq")
            .values_list("parent_id", "depth", "line_no")
            .first()
        )
        if row is None:
            self._stored_miss.add(entry_id)
            return False
        self.parents[entry_id], self.depths[entry_id] = row[0], row[1]
        self.first_line[entry_id] = row[2] or 0
        if Entry.objects.filter(revision=self.revision, parent_id=entry_id).exists():
            self.has_children.add(entry_id)
        return True

    def add(
        self, entry_id: str, parent: str | None, line_no: int
    ) -> tuple[int, int, list[Problem]]:
        """Place an entry; returns (depth, change in the number of leaves, problems)."""
        problems: list[Problem] = []
        if self._load(entry_id):
            problems.append(
                Problem(
                    line_no,
                    f"duplicate entry id {entry_id!r} (first on line {self.first_line[entry_id]}; "
                    "Pi's lookups keep the last one)",
                )
            )
        else:
            self.first_line[entry_id] = line_no
        self._stored_miss.discard(entry_id)
        leaves = 1
        depth = 0
        if parent is not None and parent != entry_id:
            if self._load(parent):
                depth = self.depths[parent] + 1
                if parent not in self.has_children:
                    self.has_children.add(parent)
                    leaves -= 1
            else:
                self.pending.append((entry_id, parent, line_no))
        self.parents[entry_id] = parent
        self.depths[entry_id] = depth
        return depth, leaves, problems

    def finish(self) -> tuple[dict[str, int], int, list[Problem]]:
        """Resolve parents that were not seen when their child was.

        Returns (entry ids whose depth changed -> new depth, change in leaves, problems). A parent
        that appears later is a forward reference (Pi's tree still links it); one that never
        appears makes the child a root, as Pi shows it. Forward references are the only way to
        build a parentId cycle, so cycles are looked for here.
        """
        problems: list[Problem] = []
        leaves = 0
        forward = False
        for entry_id, parent, line_no in self.pending:
            if self._load(parent):
                forward = True
                if parent not in self.has_children:
                    self.has_children.add(parent)
                    leaves -= 1
            else:
                problems.append(
                    Problem(
                        line_no,
                        f"parent {parent!r} of entry {entry_id!r} does not exist "
                        "(shown as a root, as Pi does)",
                    )
                )
        if not forward:
            return {}, leaves, problems
        changed: dict[str, int] = {}
        reported: set[str] = set()
        for entry_id, _parent, line_no in self.pending:
            cycle = self._cycle_from(entry_id)
            if cycle and not reported.intersection(cycle):
                reported.update(cycle)
                chain = " -> ".join([*cycle, cycle[0]])
                problems.append(
                    Problem(line_no, f"parentId cycle: {chain} (Pi would loop forever on it)")
                )
        for entry_id in list(self.depths):
            depth = self._depth_of(entry_id)
            if depth != self.depths[entry_id]:
                changed[entry_id] = depth
        self.depths.update(changed)
        return changed, leaves, problems

    def _cycle_from(self, start: str) -> list[str]:
        seen: dict[str, int] = {}
        order: list[str] = []
        current: str | None = start
        while current is not None and current in self.parents:
            if current in seen:
                return order[seen[current] :]
            seen[current] = len(order)
            order.append(current)
            parent = self.parents[current]
            current = parent if parent != current else None
        return []

    def _depth_of(self, entry_id: str) -> int:
        # Walk to a root (or to the first repeat on a cycle); depth = ancestors seen.
        seen: set[str] = set()
        depth = -1
        current: str | None = entry_id
        while current is not None and current not in seen and current in self.parents:
            seen.add(current)
            depth += 1
            parent = self.parents[current]
            current = parent if parent != current else None
        return max(depth, 0)
