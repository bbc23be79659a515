// Benchmark helper (bench/bench_projection.py): Pi 1.6.0's own projection of every entry as leaf:
// buildSessionProjection -> convertToLlm -> getCurrentSystemPrompt / getCurrentTools, timed over
// `runs` runs in one process (parsing timed apart).
// stdin: {"file": COPY_OF_SESSION, "runs": N} -> {"seconds": [...], "loadSeconds", "leaves", "messages", "promptChars", "tools"}
import {
  buildSessionProjection,
  loadEntriesFromFile,
  migrateSessionEntries,
} from "./node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js";
import { convertToLlm } from "./node_modules/@earendil-works/pi-coding-agent/dist/core/messages.js";
import { getCurrentSystemPrompt, getCurrentTools } from "@earendil-works/pi-ai";

const input = JSON.parse(await new Promise((resolve) => {
  let data = "";
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (chunk) => (data += chunk));
  process.stdin.on("end", () => resolve(data));
}));

let started = process.hrtime.bigint();
const fileEntries = loadEntriesFromFile(input.file);
migrateSessionEntries(fileEntries);
const entries = fileEntries.filter((e) => e.type !== "session");
const loadSeconds = Number(process.hrtime.bigint() - started) / 1e9;
const seconds = [];
let leaves = 0, messages = 0, promptChars = 0, tools = 0;
for (let run = 0; run < (input.runs ?? 1); run++) {
  started = process.hrtime.bigint();
  const byId = new Map(entries.map((e) => [e.id, e]));
  leaves = messages = promptChars = tools = 0;
  for (const leaf of entries) {
    const llm = convertToLlm(buildSessionProjection(entries, leaf.id, byId).messages);
    leaves += 1;
    messages += llm.length;
    promptChars += getCurrentSystemPrompt(llm).length;
    tools += getCurrentTools(llm).length;
  }
  seconds.push(Number(process.hrtime.bigint() - started) / 1e9);
}
await new Promise((resolve) =>
  process.stdout.write(JSON.stringify({ seconds, loadSeconds, leaves, messages, promptChars, tools }), resolve),
);
