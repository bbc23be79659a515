"""The apps depend one way (docs/architecture.md draws it), checked on the source itself: an AST
scan of every module under contextlab/.

Layers, bottom to top: the engine (`contextlab.pi`, pure Python, no Django), then the apps
`library` <- `review` <- `inspector` <- `jobs` <- `sharing` <- `api`. A module of one app imports
only from its own app and from the layers below it. An app's entry points (views, urls, admin,
templatetags, management commands, its AppConfig) form the web layer on top of every app: they
may use any app's services, selectors, models and forms, but no module of an app ever imports
another app's entry points (a command's or a view's helpers that others need belong in a
service or selector). The project's helper modules (`contextlab.db`, `contextlab.jsonsafe`)
sit between the engine and the apps: they import the engine only. Nothing imports another app's
private names (`_name`), and no module imports contextlab code inside a function (the usual way
to dodge an import cycle); Django's AppConfig.ready, which runs once the models are loaded, is
the one place where that is the rule rather than a dodge.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "contextlab"

# Bottom to top.
LAYERS = ("pi", "library", "review", "inspector", "jobs", "sharing", "api")
# Project modules below every app (helpers any app may use); they import the engine only.
BASE = ("contextlab.db", "contextlab.jsonsafe")
# The project's wiring: it imports the apps; no app imports it.
PROJECT = (
    "contextlab.settings",
    "contextlab.urls",
    "contextlab.wsgi",
    "contextlab.celery",
    "contextlab.jinja2",
)
ENTRY_POINTS = ("views", "urls", "admin", "templatetags", "management", "apps")


@dataclass(frozen=True)
class Module:
    name: str  # dotted
    path: Path

    @property
    def parts(self) -> list[str]:
        return self.name.split(".")

    @property
    def app(self) -> str | None:
        parts = self.parts
        return parts[1] if len(parts) > 2 and parts[1] in LAYERS else None

    @property
    def is_entry_point(self) -> bool:
        return self.app is not None and self.parts[2] in ENTRY_POINTS


def modules() -> list[Module]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if "migrations" in parts:
            continue  # generated; they import what their models' state needs
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found.append(Module(".".join(parts), path))
    return found


def _app_of(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "contextlab" and parts[1] in LAYERS else None


def _is_entry_point(name: str) -> bool:
    parts = name.split(".")
    return _app_of(name) is not None and len(parts) > 2 and parts[2] in ENTRY_POINTS


def _resolve(module: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.parts if module.path.name == "__init__.py" else module.parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _imports(module: Module) -> list[tuple[int, str, list[str], bool, bool]]:
    """(line, imported module, imported names, inside a function, inside AppConfig.ready)."""
    tree = ast.parse(module.path.read_text(), str(module.path))
    out: list[tuple[int, str, list[str], bool, bool]] = []

    def visit(node: ast.AST, in_function: bool, in_ready: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                for alias in child.names:
                    out.append((child.lineno, alias.name, [], in_function, in_ready))
            elif isinstance(child, ast.ImportFrom):
                target = _resolve(module, child)
                names = [alias.name for alias in child.names]
                out.append((child.lineno, target, names, in_function, in_ready))
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                ready = in_ready or (
                    isinstance(child, ast.FunctionDef)
                    and child.name == "ready"
                    and module.parts[-1] == "apps"
                )
                visit(child, True, ready)
            else:
                visit(child, in_function, in_ready)

    visit(tree, False, False)
    for node in ast.walk(tree):
        # apps.get_model("review", ...) is an import by another name.
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get_model"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            label = node.args[0].value.split(".")[0]
            out.append((node.lineno, f"contextlab.{label}.models", [], False, False))
    return out


def violations() -> list[str]:
    problems: list[str] = []
    for module in modules():
        for line, target, names, in_function, in_ready in _imports(module):
            if not target.startswith("contextlab"):
                continue
            where = f"{module.path.relative_to(ROOT)}:{line} imports {target}"
            if in_function and not in_ready:
                problems.append(f"{where} inside a function")
            problems.extend(f"{where}: {message}" for message in _direction(module, target))
            target_app = _app_of(target)
            if target_app is not None and target_app != module.app:
                private = [n for n in names if n.startswith("_")]
                if private:
                    problems.append(f"{where}: another app's private names {private}")
    return problems


def _direction(module: Module, target: str) -> list[str]:
    source_app, target_app = module.app, _app_of(target)
    if module.parts[:2] == ["contextlab", "pi"] and source_app == "pi":
        if target_app != "pi":
            return ["the engine imports nothing of the apps"]
        return []
    if module.name in BASE:
        if target_app != "pi" and not any(target == b for b in BASE):
            return ["a project helper imports only the engine"]
        return []
    if any(target == p or target.startswith(p + ".") for p in PROJECT):
        return [] if source_app is None else ["an app imports the project's wiring"]
    if source_app is None or target_app is None or target_app == source_app:
        return []
    if _is_entry_point(target):
        return ["an entry point of another app"]
    if module.is_entry_point:
        return []
    if LAYERS.index(target_app) > LAYERS.index(source_app):
        return [f"{source_app} is below {target_app}"]
    return []


def test_every_import_follows_the_dependency_order() -> None:
    assert violations() == []


@pytest.mark.parametrize(
    ("source", "code", "expected"),
    [
        ("contextlab.library.importer.revisions", "from contextlab.review import services", True),
        ("contextlab.review.services", "from contextlab.library.models import Session", False),
        ("contextlab.library.views", "from contextlab.review.services import audit_record", False),
        ("contextlab.library.views", "from contextlab.jobs.views import job_create", True),
        ("contextlab.pi.session", "from contextlab.library.models import Entry", True),
        ("contextlab.jobs.services", "from contextlab.library.storage import _x", True),
        ("contextlab.jobs.services", "def f():\n    from contextlab.pi import session", True),
        (
            "contextlab.inspector.apps",
            "def ready():\n    from contextlab.library import signals",
            False,
        ),
        ("contextlab.jobs.services", "def f():\n    import getpass", False),
        ("contextlab.library.models", "q = apps.get_model('review', 'ProjectMembership')", True),
        # A service using another app's command or view is against the order too.
        (
            "contextlab.api.services",
            "from contextlab.inspector.management.commands.context import f",
            True,
        ),
        ("contextlab.jobs.services", "from contextlab.inspector.views import f", True),
        ("contextlab.api.services", "from contextlab.inspector.turns import context_json", False),
        ("contextlab.sharing.services", "from contextlab.api.services import f", True),
        ("contextlab.jsonsafe", "from contextlab.library.models import Entry", True),
        ("contextlab.jsonsafe", "from contextlab.pi.jsutil import json_stringify", False),
    ],
)
def test_the_scan_catches_what_it_is_meant_to(
    tmp_path, monkeypatch, source, code, expected
) -> None:
    # The rules applied to a one-line module: each kind of violation is seen, the allowed
    # imports pass (a test that could not fail would prove nothing).
    path = tmp_path / "module.py"
    path.write_text(code + "\n")
    module = Module(source, path)
    monkeypatch.setattr(__import__(__name__, fromlist=["modules"]), "modules", lambda: [module])
    monkeypatch.setattr(Path, "relative_to", lambda self, other: self)
    assert bool(violations()) is expected


# Where Entry rows may be written: the library's storage (rows, depths) and its search index
# (search text and vectors of stored rows).
ENTRY_WRITERS = ("contextlab/library/storage/", "contextlab/library/search.py")
_ENTRY_WRITES = ("create", "bulk_create", "bulk_update", "update", "delete", "get_or_create")


def _entry_writes(path: Path) -> list[int]:
    """Lines that write Entry rows: a write method called on ``Entry.objects...``, on a name
    bound to such a query set, or on ``Entry(...)`` rows (``.save()``)."""
    tree = ast.parse(path.read_text(), str(path))
    querysets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            source = ast.unparse(node.value)
            if "Entry.objects" in source or source.startswith("Entry("):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                querysets.update(t.id for t in targets if isinstance(t, ast.Name))
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        if node.func.attr not in (*_ENTRY_WRITES, "save"):
            continue
        # Entry.objects.<write>(...), Entry.objects.filter(...)...<write>(...), qs.<write>(...)
        receiver = ast.unparse(node.func.value)
        root = receiver.split(".", 1)[0].split("(", 1)[0]
        if receiver.startswith(("Entry.objects", "Entry(")) or root in querysets:
            lines.append(node.lineno)
    return lines


def test_only_the_library_storage_writes_entry_rows() -> None:
    writers = {
        f"{path.relative_to(ROOT)}:{line}"
        for path in PACKAGE.rglob("*.py")
        if "migrations" not in path.parts
        for line in _entry_writes(path)
        if not str(path.relative_to(ROOT)).startswith(ENTRY_WRITERS)
    }
    assert writers == set()
    # The scan sees a write where there is one.
    assert _entry_writes(ROOT / "contextlab/library/storage/append.py")


@pytest.mark.parametrize(
    ("code", "writes"),
    [
        ("Entry.objects.filter(x=1).update(y=2)", True),
        ("qs = Entry.objects.filter(x=1)\nqs.update(y=2)", True),
        ("row = Entry(seq=1)\nrow.save()", True),
        ("qs = Entry.objects.filter(x=1)\nlist(qs)", False),
        ("Session.objects.filter(x=1).update(y=2)", False),
    ],
)
def test_the_entry_write_scan_sees_writes_through_query_sets(tmp_path, code, writes) -> None:
    path = tmp_path / "module.py"
    path.write_text(code + "\n")
    assert bool(_entry_writes(path)) is writes
