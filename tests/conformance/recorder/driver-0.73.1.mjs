// Drives the real Pi 0.73.1 (@mariozechner/pi-coding-agent; same SDK shape as 0.80.2) (its SDK: createAgentSession / AgentSession) through one scripted
// scenario against the fake chat-completions server, and records, for every LLM request Pi sends,
// the session leaf at that moment and the pi-ai context after transformMessages.
//
// Usage: node driver-0.73.1.mjs <scenario>   (run by `python -m tests.conformance.recorder.record_versions 0.73.1`)
// Environment: FAKE_PORT, RECORD_DIR, SCENARIO_ROOT, PI_CODING_AGENT_DIR, HOME, TZ.
//
// The scripted answers of each step are queued on the server right before the step, so a scenario
// reads top to bottom as "the user does X, the model answers Y".

import { mkdirSync, writeFileSync, appendFileSync } from "node:fs";
import { join } from "node:path";

// PI_MODULES: another installed 0.70-0.73 release (record_versions.py, the release matrix).
const MODULES = process.env.PI_MODULES ?? "../oracle-0.73.1/node_modules";
const PI = `${MODULES}/@mariozechner/pi-coding-agent/dist`;
const PI_AI = `${MODULES}/@mariozechner/pi-ai/dist`;
const { createAgentSession, buildSessionContext, convertToLlm, getPackageDir } = await import(
	`${PI}/index.js`
).then(async (index) => ({ ...index, ...(await import(`${PI}/config.js`)) }));
const { transformMessages } = await import(`${PI_AI}/providers/transform-messages.js`);

const scenarioName = process.argv[2];
const port = process.env.FAKE_PORT;
const recordDir = process.env.RECORD_DIR;
const root = process.env.SCENARIO_ROOT;
const agentDir = process.env.PI_CODING_AGENT_DIR;
const cwd = join(root, "work");
const callsFile = join(recordDir, "calls.jsonl");

// --- scripted answers ----------------------------------------------------------------------

async function queue(...answers) {
	const response = await fetch(`http://127.0.0.1:${port}/__queue`, {
		method: "POST",
		body: JSON.stringify(answers),
	});
	if (!response.ok) throw new Error(`queueing answers failed: ${response.status}`);
}

async function assertQueueEmpty(step) {
	const response = await fetch(`http://127.0.0.1:${port}/__status`, { method: "POST", body: "{}" });
	const { pending } = await response.json();
	if (pending !== 0) throw new Error(`${step}: ${pending} scripted answers were not consumed`);
}

const say = (text, thinking) => (thinking ? { thinking, text } : { text });
const call = (name, args, extra = {}) => ({ tool_calls: [{ name, arguments: args }], ...extra });
const calls = (list, extra = {}) => ({
	tool_calls: list.map(([name, args]) => ({ name, arguments: args })),
	...extra,
});

// --- the session and the request tap ----------------------------------------------------------

function stripTimestamps(messages) {
	return JSON.stringify(messages, (key, value) => (key === "timestamp" ? undefined : value));
}

// Mirrors convertMessages in pi-ai's openai-completions provider: ids are only rewritten when they
// contain "|" or, for provider "openai", exceed 40 characters.
function normalizeToolCallId(model) {
	return (id) => {
		if (id.includes("|")) return id.split("|")[0].replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 40);
		if (model.provider === "openai") return id.length > 40 ? id.slice(0, 40) : id;
		return id;
	};
}

let seq = 0;
let session;
// What the user is doing while a summarisation request goes out (compact or navigateTree with a
// summary, and their options), so a test can rebuild that request from the session alone.
let operation = null;

function tap(original) {
	return async (model, context, options) => {
		seq += 1;
		const id = String(seq).padStart(3, "0");
		const sm = session.sessionManager;
		const leafId = sm.getLeafId();
		const isSummary = context.systemPrompt?.startsWith("You are a context summarization assistant.");
		let sessionMatches = null;
		if (!isSummary) {
			// The leaf is only a faithful address of the request if rebuilding the context from the
			// persisted entries at that leaf gives exactly the messages the live agent is sending.
			const rebuilt = convertToLlm(buildSessionContext(sm.getEntries(), leafId).messages);
			sessionMatches = stripTimestamps(rebuilt) === stripTimestamps(context.messages);
		}
		const sent = transformMessages(context.messages, model, normalizeToolCallId(model));
		const record = {
			seq: id,
			kind: isSummary ? "summary" : "agent",
			leafId,
			operation: isSummary ? operation : null,
			sessionMatches,
			model: { provider: model.provider, id: model.id },
			options: { reasoning: options?.reasoning ?? null, maxTokens: options?.maxTokens ?? null },
			systemPrompt: context.systemPrompt ?? null,
			sent,
			tools: (context.tools ?? []).map((tool) => tool.name),
			toolDefinitions: (context.tools ?? []).map((tool) => ({
				name: tool.name,
				description: tool.description,
				parameters: tool.parameters,
			})),
		};
		appendFileSync(callsFile, `${JSON.stringify(record)}\n`);
		return original(model, context, {
			...options,
			headers: { ...(options?.headers ?? {}), "x-contextlab-seq": id },
		});
	};
}

async function start() {
	// The model and thinking level come from the agent dir's settings.json (defaultProvider,
	// defaultModel, defaultThinkingLevel), as in a plain `pi` run.
	const result = await createAgentSession({ cwd, agentDir });
	session = result.session;
	session.agent.streamFn = tap(session.agent.streamFn);
	return session;
}

function findModel(modelId) {
	const model = session.modelRegistry.find("fakeai", modelId);
	if (!model) throw new Error(`model fakeai/${modelId} not in models.json`);
	return model;
}

async function prompt(text, ...answers) {
	await queue(...answers);
	await session.prompt(text);
	await assertQueueEmpty(`prompt ${JSON.stringify(text.slice(0, 40))}`);
	const last = session.agent.state.messages.at(-1);
	if (last?.role === "assistant" && (last.stopReason === "error" || last.stopReason === "aborted")) {
		throw new Error(`prompt ended with ${last.stopReason}: ${last.errorMessage}`);
	}
}

async function compact(customInstructions) {
	operation = { op: "compact", customInstructions: customInstructions ?? null };
	try {
		return await session.compact(customInstructions);
	} finally {
		operation = null;
	}
}

async function navigate(targetId, options = {}) {
	operation = {
		op: "navigateTree",
		targetId,
		oldLeafId: session.sessionManager.getLeafId(),
		customInstructions: options.customInstructions ?? null,
		replaceInstructions: options.replaceInstructions ?? false,
	};
	try {
		return await session.navigateTree(targetId, options);
	} finally {
		operation = null;
	}
}

function entries() {
	return session.sessionManager.getEntries();
}

// The n-th (1-based) persisted message entry with the given role, on the whole file.
function nthMessage(role, n) {
	const found = entries().filter((e) => e.type === "message" && e.message.role === role);
	if (!found[n - 1]) throw new Error(`no ${role} message #${n}`);
	return found[n - 1];
}

function lastEntry(predicate) {
	const found = entries().filter(predicate);
	return found.at(-1);
}

// --- scenarios -------------------------------------------------------------------------------

const scenarios = {
	// Markdown project context (AGENTS.md files up the tree and CLAUDE.md), the exploration
	// guideline (bash with grep/find/ls active), tool calls, and a manual compaction (0.73's
	// summarisation system prompt, uncapped budget).
	async context() {
		writeFileSync(join(cwd, "notes.txt"), "alpha\nbeta\ngamma\n");
		await start();
		await prompt("What does notes.txt say?", call("read", { path: "notes.txt" }), say("alpha, beta, gamma.", "Read it."));
		session.setActiveToolsByName(["read", "bash", "edit", "write", "grep", "find", "ls"]);
		await prompt(
			"Count the lines with bash.",
			call("bash", { command: "wc -l notes.txt" }),
			say(`Three lines. ${"The file is short and simple; ".repeat(12)}`),
		);
		await prompt("And the first word?", say(`alpha ${"is the first word of the file; ".repeat(12)}`));
		await compact();
		await prompt("Summarise our chat.", say("We read and counted notes.txt."));
	},
};

// --- main ------------------------------------------------------------------------------------

mkdirSync(recordDir, { recursive: true });
writeFileSync(callsFile, "");
const run = scenarios[scenarioName];
if (!run) throw new Error(`unknown scenario ${scenarioName}`);
await run();
const info = {
	scenario: scenarioName,
	sessionFile: session.sessionManager.getSessionFile(),
	sessionId: session.sessionManager.getSessionId(),
	cwd,
	agentDir,
	piPackageDir: getPackageDir(),
	activeTools: session.getActiveToolNames(),
	systemPrompt: session.agent.state.systemPrompt,
	finalLeafId: session.sessionManager.getLeafId(),
};
writeFileSync(join(recordDir, "info.json"), `${JSON.stringify(info, null, 2)}\n`);
session.dispose();
