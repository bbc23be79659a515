// Benchmark helper (bench/bench_import.py): time Pi 0.80.2's own SessionManager.open of a session
// file. The caller passes a COPY: open() rewrites files it migrates or cannot read.
// Usage: node bench_open_session.mjs FILE [RUNS] -> {"seconds": [...], "entries": N}
import { SessionManager } from "./node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js";

const [file, runsArg] = process.argv.slice(2);
const runs = Number(runsArg ?? 1);
const seconds = [];
let entries = 0;
for (let i = 0; i < runs; i++) {
  const started = process.hrtime.bigint();
  const manager = SessionManager.open(file);
  entries = manager.getEntries().length;
  seconds.push(Number(process.hrtime.bigint() - started) / 1e9);
}
process.stdout.write(JSON.stringify({ seconds, entries }) + "\n");
