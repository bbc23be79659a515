// Drives the real Pi 1.6.0 (its SDK: createAgentSession / AgentSession, ModelRuntime inside)
// through one scripted scenario against the fake chat-completions server, and records, for every
// LLM request Pi sends, the session leaf at that moment and what Pi handed to pi-ai.
//
// Usage: node driver-1.6.0.mjs <scenario>   (run by `python -m tests.conformance.recorder --pi 1.6.0`)
// Environment: FAKE_PORT, RECORD_DIR, SCENARIO_ROOT, PI_CODING_AGENT_DIR, HOME, TZ.
//
// 1.x differences from the 0.80.2 driver: the stream function is `agent.streamFunction` and gets
// only `{messages}` (the prompt and tools travel as system messages); settings carry
// `cacheWarming: "off"` so Pi never re-sends a request on its own (but in the `usage` scenario,
// which keeps Pi's default "idle": its cache-warming replays reach the fake server with the
// replayed request's seq header and are kept as `<seq>.warm-<n>.body.json`); an inline extension
// answers `turn_end` with the context edits a scenario asks for.

import { appendFileSync, copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

// PI_MODULES: another installed release with the transcript API (record_versions.py, the
// release matrix); markRuntimeStreamFunction exists from 1.5 (before, the wrapper needs no mark).
const PI = `${process.env.PI_MODULES ?? "../oracle-1.6.0/node_modules"}/@earendil-works/pi-coding-agent/dist`;
const { createAgentSession, SessionManager, SettingsManager, DefaultResourceLoader } = await import(`${PI}/index.js`);
const markRuntimeStreamFunction =
	(await import(`${PI}/core/agent-session.js`)).markRuntimeStreamFunction ?? ((fn) => fn);
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

function findModel(modelId) {
	const model = session.modelRuntime.getModel("fakeai", modelId);
	if (!model) throw new Error(`model fakeai/${modelId} not in models.json`);
	return model;
}

// Cache warming runs on a timer: wait until Pi has written `count` usage entries in all.
async function waitForUsageEntries(count, timeoutMs = 30000) {
	const started = Date.now();
	while (entries().filter((e) => e.type === "usage").length < count) {
		if (Date.now() - started > timeoutMs) throw new Error(`no usage entry #${count} after ${timeoutMs} ms`);
		await new Promise((resolve) => setTimeout(resolve, 50));
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

	// More prompt patches: APPEND_SYSTEM.md present from the start, then edited (reload) and removed
	// (reload); AGENTS.md added to the project mid-session (reload); the tool set grown, so a patch
	// carries `toolsAdded`.
	async patches2() {
		writeFileSync(join(agentDir, "APPEND_SYSTEM.md"), "Answer briefly.\n");
		writeFileSync(join(cwd, "app.py"), "print('hi')\n");
		await start();
		session.setActiveToolsByName(["read", "bash"]);
		await prompt("Read app.py please.", call("read", { path: "app.py" }), say("It prints hi."));
		writeFileSync(join(cwd, "AGENTS.md"), "# Project rules\n\nUse tabs.\n");
		writeFileSync(join(agentDir, "APPEND_SYSTEM.md"), "Answer briefly, in English.\n");
		await session.reload();
		await prompt("Any rules?", say("Tabs, and brief English."));
		session.setActiveToolsByName(["read", "bash", "grep", "noop"]);
		await prompt("Run the noop tool.", call("noop", {}), say("Done, nothing came back."));
		rmSync(join(agentDir, "APPEND_SYSTEM.md"));
		await session.reload();
		await prompt("And now?", call("grep", { pattern: "hi", path: "." }), say("Only the project rules are left."));
	},

	// pi-ai's clamp binding: a model whose window (16 000) leaves less room than its maxTokens
	// (16 384), with provider usage growing so every request gets another max_completion_tokens;
	// then a switch to another model (the first model's thinking is dropped from its requests)
	// and back.
	async clamp() {
		writeSettings({ defaultModel: "fake-small" });
		writeFileSync(join(cwd, "app.py"), "print('hi')\n");
		await start();
		await prompt(
			"Plan a small refactor.",
			say("Step one: read the code.", "The user wants a plan.", { usage: { prompt_tokens: 3000, completion_tokens: 200 } }),
		);
		await prompt(
			"Read app.py.",
			call("read", { path: "app.py" }, { thinking: "I need the file.", usage: { prompt_tokens: 6000, completion_tokens: 100 } }),
			say("It prints hi.", "Short file.", { usage: { prompt_tokens: 8000, completion_tokens: 80 } }),
		);
		await session.setModel(findModel("fake-plain"));
		await prompt(
			"Say it in plain words.",
			say("The program prints hi.", undefined, { usage: { prompt_tokens: 8500, completion_tokens: 40 } }),
		);
		await session.setModel(findModel("fake-small"));
		await prompt(
			"Anything else to do?",
			say(`No. ${"The refactor is small enough to do in one go. ".repeat(30)}`, "Wrap up.", {
				usage: { prompt_tokens: 10500, completion_tokens: 400 },
			}),
		);
		await prompt("Thanks.", say("You are welcome.", "Done."));
	},

	// A branch summary over context-edited messages: on the branch that is left, a tool result is
	// replaced, a question rewritten and a reply omitted by the extension; the summary Pi sends
	// sees them edited.
	async "branch-edited"() {
		writeFileSync(join(cwd, "notes.txt"), "password: hunter2\n");
		await start();
		await prompt("Hello, what can you do?", say("I can read files and run commands."));
		const fork = lastMessage("assistant").id;
		nextTurnEndEdits = (event) =>
			event.toolResultEntryIds.map((targetId) => ({
				type: "context_edit",
				targetId,
				replacement: { content: "[notes redacted]" },
			}));
		await prompt("Show me notes.txt.", call("read", { path: "notes.txt" }), say("It holds a password."));
		const question = lastMessage("user").id;
		nextTurnEndEdits = (event) => [
			{ type: "context_edit", targetId: question, replacement: { content: "Summarise the notes file." } },
			{ type: "context_edit", targetId: event.messageEntryId, replacement: null },
		];
		await prompt("Is the password strong?", say("No, hunter2 is a famously weak password."));
		await navigate(fork, { summarize: true });
		await prompt("Let us do something else.", say("Sure, what next?"));
	},

	// Cache warming left on (Pi's default "idle"): a model with a prompt-cache lifetime (12 s, so a
	// refresh is due after 2 s) and input prices that make a refresh pay; after each prompt Pi
	// replays the last request with a one-token cap and writes a `usage` entry.
	async usage() {
		// Set, not left to the default: "idle" is 1.6.0's default, 0.86-0.87's is "streaming".
		writeSettings({ defaultModel: "fake-cached", cacheWarming: "idle" });
		writeFileSync(join(cwd, "app.py"), "print('hi')\n");
		await start();
		await prompt("Hello.", say("Hi, how can I help?"));
		await waitForUsageEntries(1);
		await prompt("Read app.py.", call("read", { path: "app.py" }), say("It prints hi."));
		await waitForUsageEntries(2);
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
if (scenarioName !== "usage") writeSettings({ cacheWarming: "off" });
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
