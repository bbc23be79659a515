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
    known = sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py"))
    unknown = [name for name in argv if name not in known]
    if unknown or argv[:1] in (["-h"], ["--help"]):
        print(f"usage: python -m bench [{'|'.join(known)} ...]  (default: all)", file=sys.stderr)
        if unknown and unknown[0] not in ("-h", "--help"):
            print(f"unknown benchmark: {', '.join(unknown)}", file=sys.stderr)
            return 2
        return 0
    names = argv or known
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
