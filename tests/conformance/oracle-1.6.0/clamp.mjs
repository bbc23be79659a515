// Oracle for pi-ai 1.6.0's output cap (tests/conformance/test_pi_1x.py): for every entry of a
// session as leaf, the context the agent hands to streamSimple ({messages: convertToLlm of the
// projection}, system messages in place) and, per case, what buildBaseOptions sends as maxTokens:
//   clampMaxTokensToContext({contextWindow, maxTokens}, context, maxTokens)
// stdin: {"file": COPY_OF_SESSION, "cases": [{"contextWindow": N, "maxTokens": N}]}
// stdout: {"leaves": [{"leafId", "maxTokens": [one per case]}]}
import {
  buildSessionProjection,
  loadEntriesFromFile,
  migrateSessionEntries,
} from "./node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js";
import { convertToLlm } from "./node_modules/@earendil-works/pi-coding-agent/dist/core/messages.js";
import { clampMaxTokensToContext } from "./node_modules/@earendil-works/pi-ai/dist/api/simple-options.js";

const input = JSON.parse(Buffer.concat(await Array.fromAsync(process.stdin)).toString("utf-8"));
const fileEntries = loadEntriesFromFile(input.file);
migrateSessionEntries(fileEntries);
const entries = fileEntries.filter((e) => e.type !== "session");
const byId = new Map(entries.map((e) => [e.id, e]));
const leaves = entries.map((leaf) => {
  const context = { messages: convertToLlm(buildSessionProjection(entries, leaf.id, byId).messages) };
  return {
    leafId: leaf.id,
    maxTokens: input.cases.map((c) => clampMaxTokensToContext(c, context, c.maxTokens)),
  };
});
await new Promise((resolve) => process.stdout.write(JSON.stringify({ leaves }), resolve));
