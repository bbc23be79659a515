// Runs the real Pi 1.6.0 summarisers against a model object pointed at contextlab's fake LLM
// server, so the test can compare the HTTP bodies Pi 1.6.0 sends with the ones contextlab sends
// (tests/conformance/test_pi_1x_anthropic.py). The summariser gets the session's thinking level
// at the leaf, as AgentSession does (_getSummarizationRequestAuth: this.thinkingLevel).
// stdin: {mode: "compact"|"branch"|"complete", model, apiKey, ...}
//   compact: sessionFile (a private copy), leafId, keepRecentTokens, reserveTokens?, customInstructions?
//   branch: sessionFile, fromId, targetId, customInstructions?, replaceInstructions?, reserveTokens?
//   complete: prompt, thinkingLevel? (one completeSummarization call, as createSummarizationOptions
//             builds its options: the level only for a reasoning model and not "off")
// stdout: {thinkingLevel, result} (complete: {stopReason, errorMessage})
// Which Pi: 1.6.0 next to this script, unless a wrapper (oracle-1.x.y/jobs_summarise.mjs) set
// globalThis.PI_ORACLE = {agent: <pi-coding-agent dist/ URL>, ai: <pi-ai dist/ URL>} first.
const PI = globalThis.PI_ORACLE ?? {
  agent: new URL("./node_modules/@earendil-works/pi-coding-agent/dist/", import.meta.url).href,
  ai: new URL("./node_modules/@earendil-works/pi-ai/dist/", import.meta.url).href,
};
const { SessionManager, buildSessionProjection } = await import(`${PI.agent}core/session-manager.js`);
const {
  collectEntriesForBranchSummary,
  compact,
  completeSummarization,
  generateBranchSummary,
  prepareCompaction,
} = await import(`${PI.agent}core/compaction/index.js`);
const { SUMMARIZATION_SYSTEM_PROMPT } = await import(`${PI.agent}core/compaction/utils.js`);

const input = JSON.parse(Buffer.concat(await Array.fromAsync(process.stdin)).toString("utf8"));
const { mode, model, apiKey } = input;

function levelAt(sm, leafId) {
  return buildSessionProjection(sm.getEntries(), leafId, undefined).thinkingLevel;
}

let out;
if (mode === "compact") {
  // input.sessionFile is a private copy: SessionManager.open may rewrite a file it migrates.
  const sm = SessionManager.open(input.sessionFile);
  const path = sm.getBranch(input.leafId);
  const thinkingLevel = levelAt(sm, input.leafId);
  const settings = {
    enabled: true,
    reserveTokens: input.reserveTokens ?? 16384,
    keepRecentTokens: input.keepRecentTokens,
  };
  const prep = prepareCompaction(path, settings);
  if (!prep) {
    out = { thinkingLevel, prepared: false };
  } else {
    const result = await compact(prep, model, apiKey, undefined, input.customInstructions ?? undefined, undefined, thinkingLevel);
    out = { thinkingLevel, prepared: true, isSplitTurn: prep.isSplitTurn, result };
  }
} else if (mode === "branch") {
  const sm = SessionManager.open(input.sessionFile);
  const thinkingLevel = levelAt(sm, input.fromId);
  const { entries } = collectEntriesForBranchSummary(sm, input.fromId, input.targetId);
  const result = await generateBranchSummary(entries, {
    model,
    apiKey,
    thinkingLevel,
    customInstructions: input.customInstructions ?? undefined,
    replaceInstructions: input.replaceInstructions ?? undefined,
    reserveTokens: input.reserveTokens ?? 16384,
  });
  out = { thinkingLevel, result };
} else if (mode === "complete") {
  const options = { apiKey };
  const level = input.thinkingLevel;
  if (model.reasoning && level && level !== "off") options.reasoning = level;
  const { normalizeContext } = await import(`${PI.ai}index.js`);
  const context = normalizeContext({
    systemPrompt: SUMMARIZATION_SYSTEM_PROMPT,
    messages: [{ role: "user", content: [{ type: "text", text: input.prompt }], timestamp: Date.now() }],
  });
  const res = await completeSummarization(model, context, options);
  out = { stopReason: res.stopReason, errorMessage: res.errorMessage ?? null };
} else {
  throw new Error(`unknown mode ${mode}`);
}
await new Promise((resolve) => process.stdout.write(JSON.stringify(out), resolve));
