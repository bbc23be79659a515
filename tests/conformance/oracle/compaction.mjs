// Oracle: Pi 0.80.2's prepareCompaction and the exact request(s) compact() sends, captured with a
// fake streamFn (no network). stdin: {sessions: [{file, cases: [{leafId, reserveTokens,
// keepRecentTokens, modelMaxTokens, customInstructions}], digest?}]}; stdout: {sessions: [[result...]]}.
// Also {cuts: [...]}: findCutPoint / findTurnStartIndex on raw entry lists.
// Session files must be private copies: SessionManager.open may rewrite a file it migrates.
import { createHash } from "node:crypto";
import { SessionManager } from "./node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js";
import { compact, findCutPoint, findTurnStartIndex, prepareCompaction } from "./node_modules/@earendil-works/pi-coding-agent/dist/core/compaction/index.js";

const stdin = [];
for await (const chunk of process.stdin) stdin.push(chunk);
const input = JSON.parse(Buffer.concat(stdin).toString("utf-8"));

function fakeModel(maxTokens) {
	return { id: "fake", name: "fake", provider: "fake", api: "openai-completions", baseUrl: "http://127.0.0.1:9", reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 128000, maxTokens };
}

// For big sessions the caller asks for digests of the bulky parts instead of the parts.
const sha = (value) => createHash("sha256").update(JSON.stringify(value)).digest("hex");

// Direct cut-point cases on raw entry lists: {entries, start, end, keep, index}.
const cuts = (input.cuts ?? []).map((c) => ({
	cut: findCutPoint(c.entries, c.start, c.end, c.keep),
	turnStart: findTurnStartIndex(c.entries, c.index, c.start),
}));

const out = [];
for (const session of input.sessions ?? []) {
	const sm = SessionManager.open(session.file);
	const results = [];
	for (const c of session.cases) {
		const path = sm.getBranch(c.leafId);
		const settings = { enabled: true, reserveTokens: c.reserveTokens, keepRecentTokens: c.keepRecentTokens };
		const prep = prepareCompaction(path, settings);
		if (!prep) {
			results.push({ prepared: false });
			continue;
		}
		// The same cut, computed directly (prepareCompaction keeps its indices private).
		let prevIndex = -1;
		for (let i = path.length - 1; i >= 0; i--) if (path[i].type === "compaction") { prevIndex = i; break; }
		let start = 0;
		if (prevIndex >= 0) {
			const k = path.findIndex((e) => e.id === path[prevIndex].firstKeptEntryId);
			start = k >= 0 ? k : prevIndex + 1;
		}
		const cut = findCutPoint(path, start, path.length, c.keepRecentTokens);
		const requests = [];
		const streamFn = (model, context, options) => {
			requests.push({
				systemPrompt: context.systemPrompt,
				messages: session.digest ? sha(context.messages.map(({ timestamp, ...m }) => m)) : context.messages.map(({ timestamp, ...m }) => m),
				maxTokens: options.maxTokens,
				hasReasoning: "reasoning" in options,
			});
			const answer = `SUMMARY${requests.length}`;
			return { result: async () => ({ role: "assistant", content: [{ type: "text", text: answer }], stopReason: "stop", api: model.api, provider: model.provider, model: model.id, usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }, timestamp: 0 }) };
		};
		const result = await compact(prep, fakeModel(c.modelMaxTokens), "key", undefined, c.customInstructions ?? undefined, undefined, "high", streamFn);
		results.push({
			prepared: true,
			firstKeptEntryId: prep.firstKeptEntryId,
			tokensBefore: prep.tokensBefore,
			isSplitTurn: prep.isSplitTurn,
			previousSummary: prep.previousSummary ?? null,
			messagesToSummarize: session.digest ? sha(prep.messagesToSummarize) : prep.messagesToSummarize,
			turnPrefixMessages: session.digest ? sha(prep.turnPrefixMessages) : prep.turnPrefixMessages,
			fileOps: { read: [...prep.fileOps.read], written: [...prep.fileOps.written], edited: [...prep.fileOps.edited] },
			cut,
			boundaryStart: start,
			requests,
			summary: result.summary,
			details: result.details,
		});
	}
	out.push(results);
}
process.stdout.write(JSON.stringify({ sessions: out, cuts }));
