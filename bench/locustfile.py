"""Locust users for `python -m bench.load`: signed-in people browsing the library, session trees,
the inspector's tabs (as htmx swaps them), search and the growth chart, and the pages' static
files (served by the app, WhiteNoise, as in the README's team deploy).

Reads the targets `bench.load` wrote (LOAD_TARGETS: session pks, entry ids along their paths,
which one is the large session) and the signed-in session's cookie (LOAD_COOKIE). Requests are named
by page type, the large session's apart, so the report gives p95 per page type. Runs under the
separate locust virtualenv (`make bench-load`); it imports nothing from contextlab.

Two workloads, chosen by the user classes named on locust's command line (bench.load does):
- "ordinary": `Browser` only;
- "adversarial": `HoldingJ` (2 users holding `j` on the largest session), `ComparingEnds`
  (1 user comparing its two ends), `SignInHammer` (1 client posting random usernames to the
  sign-in form), and `Browser` for everyone else. The adversaries' own requests are named
  "adversary: ..." and kept out of the pages' targets; what is measured is what they do to
  the browsing users.
"""

from __future__ import annotations

import json
import os
import random
import secrets

from locust import HttpUser, between, constant, task

TARGETS = json.loads(open(os.environ["LOAD_TARGETS"]).read())  # noqa: SIM115
SMALL = [s for s in TARGETS["sessions"] if not s["big"]]
BIG = [s for s in TARGETS["sessions"] if s["big"]]
WORDS = TARGETS["words"]
HTMX_INSPECTOR = {"HX-Request": "true", "HX-Target": "inspector"}
STATIC = ["css/app.css", "css/csp.css", "js/app.js", "vendor/htmx/htmx.min.js"]


def _signed_in(user: HttpUser) -> None:
    name, _, value = os.environ["LOAD_COOKIE"].partition("=")
    user.client.cookies.set(name, value, domain="127.0.0.1")


class Browser(HttpUser):
    wait_time = between(1, 3)

    def on_start(self) -> None:
        _signed_in(self)

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


class HoldingJ(HttpUser):
    """Holds `j` on the largest session's tree: one row down every 33 ms (a key's auto-repeat)
    for 60 rows, each request dropped by the browser when the next key comes (a 33 ms client
    timeout here; the server does not know), then the last row waited for, then a pause."""

    fixed_count = 2
    wait_time = between(1, 3)

    def on_start(self) -> None:
        _signed_in(self)
        self.position = 0

    @task
    def hold(self) -> None:
        session = random.choice(BIG or SMALL)
        rows = session.get("run") or session["entries"]
        url = f"/sessions/{session['pk']}/?entry={{}}&tab=context"
        for _ in range(60):
            self.position = (self.position + 1) % len(rows)
            with self.client.get(
                url.format(rows[self.position]),
                name="adversary: held j (dropped by the browser)",
                headers=HTMX_INSPECTOR,
                timeout=0.033,
                catch_response=True,
            ) as response:
                response.success()  # whatever happened: the browser moved on
        with self.client.get(
            url.format(rows[self.position]),
            name="adversary: held j (last row, waited for)",
            headers=HTMX_INSPECTOR,
            timeout=120,
            catch_response=True,
        ) as response:
            if response.status_code != 200:
                response.failure(f"HTTP {response.status_code}")


class ComparingEnds(HttpUser):
    """Compares the largest session's first entry with its leaf, again and again."""

    fixed_count = 1
    wait_time = between(1, 3)

    def on_start(self) -> None:
        _signed_in(self)

    @task
    def compare(self) -> None:
        session = random.choice(BIG or SMALL)
        with self.client.get(
            f"/sessions/{session['pk']}/compare/?a={session['first']}&b={session['leaf']}",
            name="adversary: compare the two ends",
            timeout=130,
            allow_redirects=False,
            catch_response=True,
        ) as response:
            if response.status_code not in (200, 413, 503):  # a plain "too large" is an answer
                response.failure(f"HTTP {response.status_code}")
            else:
                response.success()  # locust marks every 4xx/5xx failed unless told


class SignInHammer(HttpUser):
    """An anonymous client posting random usernames and passwords to the sign-in form, without
    pause. The form again (200) or "too many attempts" (429) are both the right answer."""

    fixed_count = 1
    wait_time = constant(0)

    def on_start(self) -> None:
        self.client.get("/accounts/login/", name="adversary: sign-in form")
        self.token = self.client.cookies.get("csrftoken", "")

    @task
    def post(self) -> None:
        with self.client.post(
            "/accounts/login/",
            data={
                "username": secrets.token_hex(6),
                "password": secrets.token_hex(8),
                "csrfmiddlewaretoken": self.token,
            },
            name="adversary: sign-in with a random name",
            allow_redirects=False,
            catch_response=True,
        ) as response:
            if response.status_code not in (200, 429):
                response.failure(f"HTTP {response.status_code}")
            else:
                response.success()  # locust marks every 4xx/5xx failed unless told
