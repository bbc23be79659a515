// Drives the real Pi 1.6.0 (its SDK: createAgentSession / AgentSession, ModelRuntime inside)
// through one scripted scenario against the fake chat-completions server, and records, for every
// LLM request Pi sends, the session leaf at that moment and what Pi handed to pi-ai.
//
// Usage: node driver-1.6.0.mjs <scenario>   (run by `python -m tests.conformance.recorder --pi 1.6.0`)
// Environment: FAKE_PORT, RECORD_DIR, SCENARIO_ROOT, PI_CODING_AGENT_DIR, HOME, TZ.
//
// 1.x differences from the 0.80.2 driver: the stream function is `agent.streamFunction` and gets
// only `{messages}` (the prompt and tools travel as system messages); settings carry
// `cacheWarming: "off"` so Pi never re-sends a request on its own; an inline extension answers
// `turn_end` with the context edits a scenario asks for.

import { appendFileSync, copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const PI = "../oracle-1.6.0/node_modules/@earendil-works/pi-coding-agent/dist";
const { createAgentSession, SessionManager, SettingsManager, DefaultResourceLoader } = await import(`${PI}/index.js`);
const { markRuntimeStreamFunction } = await import(`${PI}/core/agent-session.js`);
const { getPackageDir } = await import(`${PI}/config.js`);

const scenarioName = process.argv[2];
const port = process.env.FAKE_PORT;
const recordDir = process.env.RECORD_DIR;
const root = process.env.SCENARIO_ROOT;
const agentDir = process.env.PI_CODING_AGENT_DIR;
const cwd = join(root, "work");
const callsFile = join(recordDir, "calls.jsonl");
const REPO = new URL("../../../", import.meta.url).pathname;

// --- scripted answers ----------------------------------------------------------------------

async function queue(...answers) {
	const response = await fetch(`http://127.0.0.1:${port}/__queue`, { method: "POST", body: JSON.stringify(answers) });
	if (!response.ok) throw new Error(`queueing answers failed: ${response.status}`);
}

async function queueSummaries(...answers) {
	const response = await fetch(`http://127.0.0.1:${port}/__queue_summaries`, {
		method: "POST",
		body: JSON.stringify(answers),
	});
	if (!response.ok) throw new Error(`queueing summaries failed: ${response.status}`);
}

async function assertQueueEmpty(step) {
	const response = await fetch(`http://127.0.0.1:${port}/__status`, { method: "POST", body: "{}" });
	const { pending } = await response.json();
	if (pending !== 0) throw new Error(`${step}: ${pending} scripted answers were not consumed`);
}

const say = (text, thinking, extra = {}) => ({ ...(thinking ? { thinking, text } : { text }), ...extra });
const call = (name, args, extra = {}) => ({ tool_calls: [{ name, arguments: args }], ...extra });

// --- the session and the request tap ----------------------------------------------------------

let seq = 0;
let session;
let operation = null;
// The scenario's answer to the next turn_end: a function (event) => drafts, consumed once.
let nextTurnEndEdits = null;

function tap(original) {
	const wrapped = async (model, context, options) => {
		seq += 1;
		const id = String(seq).padStart(3, "0");
		const sm = session.sessionManager;
		const first = context.messages?.find((m) => m.role === "system");
		const systemText = first ? [first.content, ...Object.values(first.sections ?? {})].join("") : "";
		const isSummary = typeof systemText === "string" && systemText.startsWith("You are a context summarization assistant.");
		const record = {
			seq: id,
			kind: isSummary ? "summary" : "agent",
			leafId: sm.getLeafId(),
			operation: isSummary ? operation : null,
			model: { provider: model.provider, id: model.id },
			options: { reasoning: options?.reasoning ?? null, maxTokens: options?.maxTokens ?? null },
			messages: context.messages,
		};
		appendFileSync(callsFile, `${JSON.stringify(record)}\n`);
		return original(model, context, { ...options, headers: { ...(options?.headers ?? {}), "x-contextlab-seq": id } });
	};
	return wrapped;
}

function recorderExtension(pi) {
	pi.on("turn_end", async (event) => {
		if (!nextTurnEndEdits) return undefined;
		const plan = nextTurnEndEdits;
		nextTurnEndEdits = null;
		return { entries: plan(event) };
	});
	pi.registerTool({
		name: "noop",
		label: "noop",
		description: "Does nothing and returns no output.",
		parameters: { type: "object", properties: {} },
		async execute() {
			return { content: [], details: {} };
		},
	});
}

async function start({ sessionManager } = {}) {
	const settingsManager = SettingsManager.create(cwd, agentDir);
	const resourceLoader = new DefaultResourceLoader({
		cwd,
		agentDir,
		settingsManager,
		extensionFactories: [{ name: "contextlab-recorder", factory: recorderExtension }],
	});
	await resourceLoader.reload();
	const result = await createAgentSession({ cwd, agentDir, settingsManager, resourceLoader, sessionManager });
	session = result.session;
	const original = session.agent.streamFunction;
	const wrapped = tap(original);
	session.agent.streamFunction = wrapped;
	markRuntimeStreamFunction(wrapped, session.modelRuntime);
	return session;
}

async function prompt(text, ...answers) {
	await queue(...answers);
	await session.prompt(text);
	await assertQueueEmpty(`prompt ${JSON.stringify(text.slice(0, 40))}`);
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

const entries = () => session.sessionManager.getEntries();
function nthMessage(role, n) {
	const found = entries().filter((e) => e.type === "message" && e.message.role === role);
	if (!found[n - 1]) throw new Error(`no ${role} message #${n}`);
	return found[n - 1];
}
function lastMessage(role) {
	return entries().filter((e) => e.type === "message" && e.message.role === role).at(-1);
}

function writeSettings(extra) {
	const path = join(agentDir, "settings.json");
	const settings = JSON.parse(readFileSync(path, "utf8"));
	writeFileSync(path, `${JSON.stringify({ ...settings, ...extra }, null, 2)}\n`);
}

// --- scenarios -------------------------------------------------------------------------------

const scenarios = {
	// Prompt patches: the first prompt persists the full system state; a tool set change, then
	// AGENTS.md edited and APPEND_SYSTEM.md added (reload), then both removed (reload) append
	// patch messages. An extension tool answers with no content ("(no tool output)").
	async patches() {
		writeFileSync(join(cwd, "AGENTS.md"), "# Project rules\n\nUse tabs.\n");
		writeFileSync(join(cwd, "app.py"), "print('hi')\n");
		await start();
		await prompt(
			"Read app.py please.",
			call("read", { path: "app.py" }, { thinking: "Read it." }),
			say("It prints hi."),
		);
		session.setActiveToolsByName(["read", "bash", "edit", "write", "noop"]);
		await prompt("Run the noop tool.", call("noop", {}), say("Done, it returned nothing."));
		writeFileSync(join(cwd, "AGENTS.md"), "# Project rules\n\nUse spaces, four of them.\n");
		writeFileSync(join(agentDir, "APPEND_SYSTEM.md"), "Always answer in English.\n");
		await session.reload();
		await prompt("What are the rules now?", say("Four spaces, English."));
		rmSync(join(cwd, "AGENTS.md"));
		rmSync(join(agentDir, "APPEND_SYSTEM.md"));
		session.setActiveToolsByName(["read", "bash"]);
		await session.reload();
		await prompt("And now?", call("bash", { command: "echo plain" }), say("No rules left."));
	},

	// Context edits written by an extension from turn_end: a tool result replaced, a reply omitted,
	// a question rewritten; then a compaction and a branch summary over the edited content.
	async edits() {
		writeFileSync(join(cwd, "secret.txt"), "token=abc123\n");
		await start();
		nextTurnEndEdits = (event) =>
			event.toolResultEntryIds.map((targetId) => ({
				type: "context_edit",
				targetId,
				replacement: { content: "[redacted by policy]" },
			}));
		await prompt("Show me secret.txt.", call("read", { path: "secret.txt" }), say("It holds a token."));
		nextTurnEndEdits = (event) => [{ type: "context_edit", targetId: event.messageEntryId, replacement: null }];
		await prompt("Say something silly.", say("Bananas are berries, and so is this reply."));
		const question = lastMessage("user").id;
		nextTurnEndEdits = () => [
			{ type: "context_edit", targetId: question, replacement: { content: "Say something useful." } },
		];
		await prompt("Tell me a joke.", say("Use version control."));
		await prompt("Thanks, what next?", say(`Next: ${"write tests and keep the history clean; ".repeat(40)}`));
		await compact("Mention the redaction.");
		await prompt("Summarise where we are.", say("We read a redacted file and got advice."));
		const target = nthMessage("user", 3);
		await navigate(target.id, { summarize: true });
		await prompt("Another take on the joke?", say("A reply about commits."));
	},

	// Length stops: a plain reply cut by the token cap, a reply whose tool call was cut (its call is
	// answered with Pi's fixed text), a summary rejected because it stopped on length, and an
	// overflow error recovered by compaction and a retry.
	async length() {
		writeSettings({ compaction: { enabled: true, keepRecentTokens: 150, reserveTokens: 2000 } });
		await start();
		await prompt("Write a long poem.", say("Roses are red, violets are", undefined, { finish: "length", usage: { prompt_tokens: 1000, completion_tokens: 16384 } }));
		await prompt(
			"Create poem.txt with it.",
			call("write", { path: "poem.txt", content: "Roses" }, { finish: "length", usage: { prompt_tokens: 1100, completion_tokens: 16384 } }),
			say("I will retry later."),
		);
		await prompt("Fine, just say ok.", say(`ok ${"and some padding to give the summary something to chew; ".repeat(12)}`));
		await queueSummaries({ text: "## Goal\nCut", finish: "length" });
		let rejected = null;
		try {
			await compact();
		} catch (error) {
			rejected = error.message;
		}
		if (!rejected) throw new Error("expected the summary to be rejected on length");
		writeFileSync(join(recordDir, "rejected.txt"), rejected);
		await prompt(
			"One more question about poems.",
			{ error: "This model's maximum context length is 4096 tokens. However, your messages resulted in 9000 tokens. exceeds the context window", status: 400 },
			say("Poems are fine after compaction."),
		);
	},

	// A session written by Pi 0.80.2 (the recorded `tools` corpus) resumed under 1.6.0: earlier turns
	// are 0.80 requests, later ones 1.x replays from the first system message.
	async resumed() {
		const source = join(REPO, "tests/conformance/corpus/tools/session.jsonl");
		const sessionDir = join(root, "sessions");
		mkdirSync(sessionDir, { recursive: true });
		const copy = join(sessionDir, "resumed.jsonl");
		copyFileSync(source, copy);
		const sessionManager = SessionManager.open(copy, sessionDir, cwd);
		await start({ sessionManager });
		await prompt("We are on Pi 1.6 now. Anything changed?", say("Only the harness."));
		await prompt("List files.", call("bash", { command: "ls" }), say("Listed."));
	},
};

// --- main ------------------------------------------------------------------------------------

mkdirSync(recordDir, { recursive: true });
writeFileSync(callsFile, "");
writeSettings({ cacheWarming: "off" });
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
	finalLeafId: session.sessionManager.getLeafId(),
};
writeFileSync(join(recordDir, "info.json"), `${JSON.stringify(info, null, 2)}\n`);
session.dispose();
