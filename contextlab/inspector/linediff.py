"""A line diff whose cost is bounded whatever the texts: Myers' O(ND) algorithm over hashed lines,
stopped after a fixed amount of work.

`difflib.ndiff` (what Compare used before) looks for the most similar pair of lines inside every
replaced block, character by character: two messages of 1,500 lines that each differ a little
cost minutes. Here:

1. the common head and tail are cut off (linear; most pairs of messages differ in a few places);
2. the remaining lines are interned as integers, so comparing two lines is one integer compare;
3. Myers' greedy search for the shortest edit script runs on them, counting every step (the
   diagonals it extends and the snakes it follows) against ``max_work``; past it the search
   stops and the pair is reported as *replaced* (too different to show line by line), which the
   page says plainly, with both full texts one click away;
4. the script is read back from the search's frontiers, and long runs of equal lines are folded
   to a few lines of context around each change.

The cost is O(len(a) + len(b) + max_work) in time and memory, so a hostile pair of messages
cannot pin a web worker. Pure Python, no Django (usable from any process).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

# Steps of the search allowed for one pair of texts. About 0.1 s of Python; a pair of texts that
# differ in a few hundred lines fits easily.
MAX_WORK = 300_000
# Lines of context kept around each change; runs of equal lines longer than this are folded.
CONTEXT = 3

Line = tuple[str, str]  # (op, text): op is eq, del, ins or fold (a folded run: text says so)


@dataclass
class LineDiff:
    """The diff of two texts: ``lines`` in order, or ``replaced`` when the search ran out of
    work (``lines`` is then empty)."""

    lines: list[Line] = field(default_factory=list)
    replaced: bool = False
    added: int = 0
    removed: int = 0
    work: int = 0  # steps spent (for the caller's own budget across many pairs)


def diff_lines(
    before: str, after: str, *, max_work: int = MAX_WORK, context: int = CONTEXT
) -> LineDiff:
    """The line diff of ``before`` and ``after`` (see the module docstring for the steps)."""
    a, b = before.splitlines(), after.splitlines()
    # 1. The common head and tail.
    head = 0
    limit = min(len(a), len(b))
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    mid_a, mid_b = a[head : len(a) - tail], b[head : len(b) - tail]
    work = len(a) + len(b)
    # 2. Lines as integers.
    ids: dict[str, int] = {}
    xs = [ids.setdefault(line, len(ids)) for line in mid_a]
    ys = [ids.setdefault(line, len(ids)) for line in mid_b]
    # 3. The shortest edit script, within the budget.
    script = _myers(xs, ys, max_work)
    if script is None:
        return LineDiff(replaced=True, added=len(ys), removed=len(xs), work=work + max_work)
    ops, steps = script
    out: list[Line] = [("eq", line) for line in a[:head]]
    i = j = 0
    for op in ops:
        if op == "eq":
            out.append(("eq", mid_a[i]))
            i += 1
            j += 1
        elif op == "del":
            out.append(("del", mid_a[i]))
            i += 1
        else:
            out.append(("ins", mid_b[j]))
            j += 1
    out.extend(("eq", line) for line in a[len(a) - tail :])
    removed = sum(1 for op in ops if op == "del")
    added = sum(1 for op in ops if op == "ins")
    # 4. Equal runs folded.
    return LineDiff(_fold(out, context), False, added, removed, work + steps)


def _myers(xs: Sequence[int], ys: Sequence[int], max_work: int) -> tuple[list[str], int] | None:
    """Myers (1986), the greedy forward search: for each number of edits d, the furthest x
    reached on every diagonal k = x - y. Each d's frontier is kept (a list of 2d+1 numbers) to
    read the script back; None once more than ``max_work`` steps were spent."""
    n, m = len(xs), len(ys)
    if n == 0 or m == 0:
        return ["del"] * n + ["ins"] * m, 0
    offset = n + m
    frontier = [0] * (2 * offset + 2)
    trace: list[list[int]] = []
    work = 0
    for d in range(n + m + 1):
        work += 2 * d + 1
        if work > max_work:
            return None
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and frontier[offset + k - 1] < frontier[offset + k + 1]):
                x = frontier[offset + k + 1]  # down: an insertion
            else:
                x = frontier[offset + k - 1] + 1  # right: a deletion
            y = x - k
            start = x
            while x < n and y < m and xs[x] == ys[y]:
                x += 1
                y += 1
            work += x - start
            frontier[offset + k] = x
            if x >= n and y >= m:
                trace.append(frontier[offset - d : offset + d + 1])
                return _script(trace, n, m), work
        trace.append(frontier[offset - d : offset + d + 1])
        if work > max_work:
            return None
    return None  # not reached: d = n + m always ends the search


def _script(trace: list[list[int]], n: int, m: int) -> list[str]:
    """The edit script, read back from the last frontier to the first."""
    ops: list[str] = []
    x, y = n, m
    for d in range(len(trace) - 1, 0, -1):
        previous = trace[d - 1]  # frontier of d - 1: diagonals -(d-1) .. d-1

        def at(k: int, previous: list[int] = previous, d: int = d) -> int:
            return previous[k + d - 1]

        k = x - y
        down = k == -d or (k != d and at(k - 1) < at(k + 1))  # an insertion led here
        prev_k = k + 1 if down else k - 1
        prev_x = at(prev_k)
        prev_y = prev_x - prev_k
        while x > prev_x and y > prev_y:  # the snake after the edit
            ops.append("eq")
            x -= 1
            y -= 1
        if down:
            ops.append("ins")
            y -= 1
        else:
            ops.append("del")
            x -= 1
        # x, y is now where the edit started (prev_x, prev_y)
    ops.extend(["eq"] * x)  # the first snake (d = 0)
    ops.reverse()
    return ops


def _fold(lines: list[Line], context: int) -> list[Line]:
    """Runs of equal lines longer than twice ``context`` (plus one) become ``context`` lines,
    one fold line saying how many were left out, and ``context`` lines."""
    out: list[Line] = []
    run: list[Line] = []

    def flush(first: bool, last: bool) -> None:
        keep_head = 0 if first else context
        keep_tail = 0 if last else context
        if len(run) <= keep_head + keep_tail + 1:
            out.extend(run)
        else:
            hidden = len(run) - keep_head - keep_tail
            out.extend(run[:keep_head])
            out.append(("fold", f"⋯ {hidden} unchanged line{'s' if hidden != 1 else ''}"))
            out.extend(run[len(run) - keep_tail :])
        run.clear()

    first = True
    for line in lines:
        if line[0] == "eq":
            run.append(line)
            continue
        flush(first, False)
        first = False
        out.append(line)
    if first:  # no change at all: nothing to fold around
        return lines
    flush(False, True)
    return out
