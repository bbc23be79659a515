// Runs the real Pi 0.80.2 summarisers against a model object pointed at contextlab's fake LLM
// server, so the test can compare the HTTP bodies Pi sends with the ones contextlab sends.
// stdin: {mode: "complete"|"compact"|"branch", model, apiKey, ...}; stdout: Pi's result.
import { readFileSync } from "node:fs";
import { completeSimple } from "./node_modules/@earendil-works/pi-ai/dist/compat.js";
import { SessionManager } from "./node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js";
import {
  collectEntriesForBranchSummary,
  compact,
  generateBranchSummary,
  prepareCompaction,
} from "./node_modules/@earendil-works/pi-coding-agent/dist/core/compaction/index.js";

const input = JSON.parse(Buffer.concat(await Array.fromAsync(process.stdin)).toString("utf8"));
const { mode, model, apiKey } = input;
let out;
if (mode === "complete") {
  const res = await completeSimple(model, input.context, { ...input.options, apiKey });
  out = { stopReason: res.stopReason, errorMessage: res.errorMessage ?? null, content: res.content, usage: res.usage };
} else if (mode === "compact") {
  // input.sessionFile is a private copy: SessionManager.open may rewrite a file it migrates.
  const sm = SessionManager.open(input.sessionFile);
  const path = sm.getBranch(input.leafId ?? undefined);
  const settings = { enabled: true, reserveTokens: input.reserveTokens ?? 16384, keepRecentTokens: input.keepRecentTokens ?? 20000 };
  const prep = prepareCompaction(path, settings);
  if (!prep) {
    out = { prepared: false };
  } else {
    const res = await compact(prep, model, apiKey, undefined, input.customInstructions ?? undefined, undefined, input.thinkingLevel ?? undefined);
    out = { prepared: true, result: res };
  }
} else if (mode === "branch") {
  const sm = SessionManager.open(input.sessionFile);
  const { entries, commonAncestorId } = collectEntriesForBranchSummary(sm, input.fromId, input.targetId);
  const res = await generateBranchSummary(entries, {
    model,
    apiKey,
    customInstructions: input.customInstructions ?? undefined,
    replaceInstructions: input.replaceInstructions ?? undefined,
    reserveTokens: input.reserveTokens ?? 16384,
  });
  out = { commonAncestorId, entryIds: entries.map((e) => e.id), result: res };
} else {
  throw new Error(`unknown mode ${mode}`);
}
process.stdout.write(JSON.stringify(out));
