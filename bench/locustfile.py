"""Locust users for `python -m bench.load`: signed-in people browsing the library, session trees,
the inspector's tabs (as htmx swaps them), search and the growth chart, and the pages' static
files (served by the app, WhiteNoise, as in the README's team deploy).

Reads the targets `bench.load` wrote (LOAD_TARGETS: session pks, entry ids along their paths,
which one is the large session) and the signed-in session's cookie (LOAD_COOKIE). Requests are named
by page type, the large session's apart, so the report gives p95 per page type. Runs under the
separate locust virtualenv (`make bench-load`); it imports nothing from contextlab.
"""

from __future__ import annotations

import json
import os
import random

from locust import HttpUser, between, task

TARGETS = json.loads(open(os.environ["LOAD_TARGETS"]).read())  # noqa: SIM115
SMALL = [s for s in TARGETS["sessions"] if not s["big"]]
BIG = [s for s in TARGETS["sessions"] if s["big"]]
WORDS = TARGETS["words"]
HTMX_INSPECTOR = {"HX-Request": "true", "HX-Target": "inspector"}
STATIC = ["css/app.css", "css/csp.css", "js/app.js", "vendor/htmx/htmx.min.js"]


class Browser(HttpUser):
    wait_time = between(1, 3)

    def on_start(self) -> None:
        name, _, value = os.environ["LOAD_COOKIE"].partition("=")
        self.client.cookies.set(name, value, domain="127.0.0.1")

    def _get(self, url: str, name: str, headers: dict | None = None) -> None:
        """A page counts as an error unless it answers 200 itself (a redirect to the sign-in
        page would otherwise pass for a fast page)."""
        with self.client.get(
            url, name=name, headers=headers, allow_redirects=False, catch_response=True
        ) as response:
            if response.status_code != 200:
                response.failure(f"HTTP {response.status_code}")

    def _session(self) -> tuple[dict, str]:
        # One visit in ten goes to the large session.
        if BIG and random.random() < 0.1:
            return random.choice(BIG), " (large)"
        return random.choice(SMALL), ""

    @task(3)
    def library(self) -> None:
        self._get("/", "library")

    @task(3)
    def tree(self) -> None:
        session, suffix = self._session()
        self._get(f"/sessions/{session['pk']}/", f"tree{suffix}")

    @task(4)
    def inspector(self) -> None:
        session, suffix = self._session()
        entry = random.choice(session["entries"])
        tab = random.choices(["context", "prompt", "diff", "json"], weights=[4, 1, 1, 1])[0]
        self._get(
            f"/sessions/{session['pk']}/?entry={entry}&tab={tab}",
            f"inspector {tab}{suffix}",
            HTMX_INSPECTOR,
        )

    @task(2)
    def search(self) -> None:
        self._get(f"/search/?q={random.choice(WORDS)}", "search")

    @task(1)
    def static(self) -> None:
        """A page's own CSS and scripts, as a browser with an empty cache fetches them."""
        for path in STATIC:
            self._get(f"/static/{path}", "static")

    @task(1)
    def chart(self) -> None:
        session, suffix = self._session()
        self._get(f"/sessions/{session['pk']}/chart/", f"chart{suffix}")
