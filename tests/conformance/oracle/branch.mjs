// Oracle: Pi 0.80.2's collectEntriesForBranchSummary, prepareBranchEntries and the exact request
// generateBranchSummary sends, captured with a fake streamFn (no network).
// stdin: {sessions: [{file, cases: [{fromId, targetId, reserveTokens, contextWindow,
// customInstructions, replaceInstructions}]}]}; stdout: {sessions: [[result...]]}.
// Session files must be private copies: SessionManager.open may rewrite a file it migrates.
import { SessionManager } from "./node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js";
import { collectEntriesForBranchSummary, generateBranchSummary, prepareBranchEntries } from "./node_modules/@earendil-works/pi-coding-agent/dist/core/compaction/index.js";

const stdin = [];
for await (const chunk of process.stdin) stdin.push(chunk);
const input = JSON.parse(Buffer.concat(stdin).toString("utf-8"));

const out = [];
for (const session of input.sessions) {
	const sm = SessionManager.open(session.file);
	const results = [];
	for (const c of session.cases) {
		const { entries, commonAncestorId } = collectEntriesForBranchSummary(sm, c.fromId, c.targetId);
		const model = { id: "fake", name: "fake", provider: "fake", api: "openai-completions", baseUrl: "http://127.0.0.1:9", reasoning: true, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: c.contextWindow, maxTokens: 1000 };
		const budget = (model.contextWindow || 128000) - c.reserveTokens;
		const prepared = prepareBranchEntries(entries, budget);
		const requests = [];
		const streamFn = (m, context, options) => {
			requests.push({ systemPrompt: context.systemPrompt, messages: context.messages.map(({ timestamp, ...rest }) => rest), maxTokens: options.maxTokens, optionKeys: Object.keys(options).sort() });
			return { result: async () => ({ role: "assistant", content: [{ type: "text", text: "BRANCH" }], stopReason: "stop", api: m.api, provider: m.provider, model: m.id, usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }, timestamp: 0 }) };
		};
		const result = entries.length > 0
			? await generateBranchSummary(entries, { model, apiKey: "key", customInstructions: c.customInstructions ?? undefined, replaceInstructions: c.replaceInstructions ?? undefined, reserveTokens: c.reserveTokens, streamFn })
			: null;
		results.push({
			commonAncestorId,
			entryIds: entries.map((e) => e.id),
			messages: prepared.messages,
			totalTokens: prepared.totalTokens,
			fileOps: { read: [...prepared.fileOps.read], written: [...prepared.fileOps.written], edited: [...prepared.fileOps.edited] },
			requests,
			result,
		});
	}
	out.push(results);
}
process.stdout.write(JSON.stringify({ sessions: out }));
