"""Locust users for `python -m bench.load`: signed-in people browsing the library, session trees,
the inspector's tabs (as htmx swaps them), search and the growth chart.

Reads the targets `bench.load` wrote (LOAD_TARGETS: session pks, entry ids along their paths,
which one is the large session) and the user (LOAD_USER / LOAD_PASSWORD). Requests are named
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


class Browser(HttpUser):
    wait_time = between(1, 3)

    def on_start(self) -> None:
        self.client.get("/accounts/login/", name="login")
        token = self.client.cookies.get("csrftoken", "")
        self.client.post(
            "/accounts/login/",
            {
                "username": os.environ["LOAD_USER"],
                "password": os.environ["LOAD_PASSWORD"],
                "csrfmiddlewaretoken": token,
            },
            headers={"Referer": f"{self.host}/accounts/login/"},
            name="login",
        )

    def _session(self) -> tuple[dict, str]:
        # One visit in ten goes to the large session.
        if BIG and random.random() < 0.1:
            return random.choice(BIG), " (large)"
        return random.choice(SMALL), ""

    @task(3)
    def library(self) -> None:
        self.client.get("/", name="library")

    @task(3)
    def tree(self) -> None:
        session, suffix = self._session()
        self.client.get(f"/sessions/{session['pk']}/", name=f"tree{suffix}")

    @task(4)
    def inspector(self) -> None:
        session, suffix = self._session()
        entry = random.choice(session["entries"])
        tab = random.choices(["context", "prompt", "diff", "json"], weights=[4, 1, 1, 1])[0]
        self.client.get(
            f"/sessions/{session['pk']}/?entry={entry}&tab={tab}",
            headers=HTMX_INSPECTOR,
            name=f"inspector {tab}{suffix}",
        )

    @task(2)
    def search(self) -> None:
        self.client.get(f"/search/?q={random.choice(WORDS)}", name="search")

    @task(1)
    def chart(self) -> None:
        session, suffix = self._session()
        self.client.get(f"/sessions/{session['pk']}/chart/", name=f"chart{suffix}")
