"""Run the benchmarks: `python -m bench [name ...]` runs bench/bench_<name>.py (default: all).

Each module has a `main() -> dict` that measures contextlab side by side with the real Pi where the
issue asks for it and returns its figures; they are printed and written to bench/results/.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent


def main(argv: list[str]) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextlab.settings")
    names = argv or sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py"))
    results_dir = HERE / "results"
    results_dir.mkdir(exist_ok=True)
    for name in names:
        module = importlib.import_module(f"bench.bench_{name}")
        started = time.perf_counter()
        figures = module.main()
        figures["wall_seconds"] = round(time.perf_counter() - started, 2)
        print(f"== {name}\n{json.dumps(figures, indent=2)}", flush=True)
        (results_dir / f"{name}.json").write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
