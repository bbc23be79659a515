"""Generate contextlab/pi/dialects/pi_0_80_models.json: pi-ai 0.80.2's built-in model catalog.

Usage (from the repository root, the oracle installed under tests/conformance/oracle):
    .venv/bin/python tools/gen_pi_models.py

Keeps, per model, what the engine needs (api, input, reasoning, contextWindow, maxTokens, cost,
name): ``{provider: {model id: {...}}}`` in pi-ai's own order. Data from pi-ai (MIT License,
Copyright (c) 2025 Mario Zechner).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORACLE = ROOT / "tests" / "conformance" / "oracle"
OUT = ROOT / "contextlab" / "pi" / "dialects" / "pi_0_80_models.json"
KEYS = ("id", "name", "api", "provider", "reasoning", "input", "cost", "contextWindow", "maxTokens")

SCRIPT = """
import { MODELS } from "./node_modules/@earendil-works/pi-ai/dist/models.generated.js";
import { readFileSync } from "fs";
const pkg = JSON.parse(readFileSync("./node_modules/@earendil-works/pi-ai/package.json", "utf8"));
process.stdout.write(JSON.stringify({ version: pkg.version, models: MODELS }));
"""


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from tests.conformance.conftest import node_binary

    node = node_binary()
    if node is None:
        print("Node 24 not found", file=sys.stderr)
        return 1
    proc = subprocess.run(
        [node, "--input-type=module", "-e", SCRIPT],
        cwd=ORACLE,
        capture_output=True,
        check=True,
    )
    raw = json.loads(proc.stdout)
    catalog = {
        provider: {
            model_id: {k: model[k] for k in KEYS if k in model}
            for model_id, model in models.items()
        }
        for provider, models in raw["models"].items()
    }
    doc = {"piAiVersion": raw["version"], "generatedBy": "tools/gen_pi_models.py"}
    doc["models"] = catalog
    OUT.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    count = sum(len(m) for m in catalog.values())
    print(f"{OUT.relative_to(ROOT)}: {count} models from pi-ai {raw['version']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
