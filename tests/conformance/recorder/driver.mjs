// Drives the real Pi 0.80.2 (its SDK: createAgentSession / AgentSession) through one scripted
// scenario against the fake chat-completions server, and records, for every LLM request Pi sends,
// the session leaf at that moment and the pi-ai context after transformMessages.
//
// Usage: node driver.mjs <scenario>   (run by `python -m tests.conformance.recorder`)
// Environment: FAKE_PORT, RECORD_DIR, SCENARIO_ROOT, PI_CODING_AGENT_DIR, HOME, TZ.
//
// The scripted answers of each step are queued on the server right before the step, so a scenario
// reads top to bottom as "the user does X, the model answers Y".

import { mkdirSync, writeFileSync, appendFileSync } from "node:fs";
import { join } from "node:path";

// PI_MODULES / PI_SCOPE: another installed release (record_versions.py, the release matrix);
// by default the 0.80.2 oracle. The SDK differences of 0.74 to 0.85 are handled where they bite:
// pi-ai's transform-messages.js under providers/ (to 0.7x) or api/, the agent's streamFn
// (streamFunction from 0.82), the model registry (ModelRuntime.getModel from 0.80.3).
const MODULES = process.env.PI_MODULES ?? "../oracle/node_modules";
const SCOPE = process.env.PI_SCOPE ?? "@earendil-works";
const PI = `${MODULES}/${SCOPE}/pi-coding-agent/dist`;
const PI_AI = `${MODULES}/${SCOPE}/pi-ai/dist`;
const { createAgentSession, buildSessionContext, convertToLlm, getPackageDir } = await import(
	`${PI}/index.js`
).then(async (index) => ({ ...index, ...(await import(`${PI}/config.js`)) }));
const { transformMessages } = await import(`${PI_AI}/api/transform-messages.js`).catch(() =>
	import(`${PI_AI}/providers/transform-messages.js`),
);

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
	const key = session.agent.streamFunction !== undefined ? "streamFunction" : "streamFn";
	session.agent[key] = tap(session.agent[key]);
	return session;
}

function findModel(modelId) {
	const model = session.modelRegistry
		? session.modelRegistry.find("fakeai", modelId)
		: session.modelRuntime.getModel("fakeai", modelId);
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

// Single-character lines keep the truncated outputs (2000 lines each) small in the corpus.
const BIG_LINES = Array.from({ length: 2100 }, (_, i) => `${i % 10}`).join("\n") + "\n";

const PIXEL_PNG =
	"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

const scenarios = {
	// Real tool calls executed by Pi: read truncated at 2000 lines, bash with a long output cut to
	// its tail (temp file notice), bash with a non-zero exit, write, edit; a label and a name.
	async tools() {
		writeFileSync(join(cwd, "big.txt"), BIG_LINES);
		writeFileSync(join(cwd, "app.py"), 'def greet(name):\n    return "hello " + name\n');
		await start();
		session.setSessionName("Tool calls demo");
		await prompt(
			"Please look at big.txt and tell me how many rows it has.",
			call("read", { path: "big.txt" }, { thinking: "The file may be large; read it first." }),
			call("bash", { command: "wc -l big.txt && yes . | head -n 2300" }),
			call("bash", { command: "ls does-not-exist" }),
			say("big.txt has 2100 rows; the listing failed because the file does not exist.", "Count confirmed."),
		);
		await prompt(
			"Create notes.md with a title, then make greet in app.py use an f-string.",
			calls([
				["write", { path: "notes.md", content: "# Notes\n\nbig.txt has 2100 rows.\n" }],
				["read", { path: "app.py" }],
			]),
			call("edit", {
				path: "app.py",
				edits: [{ oldText: 'return "hello " + name', newText: 'return f"hello {name}"' }],
			}),
			say("Done: notes.md created and greet now uses an f-string."),
		);
		session.sessionManager.appendLabelChange(nthMessage("user", 1).id, "rows-question");
		await prompt("Thanks. Anything else worth checking?", say("No, everything looks fine."));
		// A provider error (retries are off in settings.json): the error message is persisted but
		// pi-ai drops it from the next request.
		await queue({ text: "A limerick ab", finish: "content_filter" });
		await session.prompt("Write a limerick about rows.");
		await assertQueueEmpty("error answer");
		if (session.agent.state.messages.at(-1)?.stopReason !== "error") throw new Error("expected an error answer");
		await prompt("Never mind, just say ok.", say("ok"));
	},

	// Branches: navigate back without a summary and continue; navigate again with a summary (a
	// branch_summary entry, answered by the fake summariser) and a label, then continue.
	async branches() {
		writeFileSync(join(cwd, "README.md"), "# Demo\n\nA tiny project used for recording.\n");
		await start();
		await prompt("What is this project?", call("read", { path: "README.md" }), say("A tiny demo project."));
		await prompt("Suggest a name for it.", say("How about 'Tiny'?", "Short names are good."));
		const firstAnswer = nthMessage("assistant", 2);
		await navigate(firstAnswer.id);
		await prompt("Actually, suggest a licence instead.", say("MIT is a good default."));
		await prompt("Why MIT?", say("It is short and permissive."));
		const secondUser = nthMessage("user", 2);
		await navigate(secondUser.id, { summarize: true, label: "names-again" });
		await prompt("Let's go back to names: something longer?", say("'Tiny Recording Project'."));
		const licenceUser = nthMessage("user", 3);
		await navigate(licenceUser.id, {
			summarize: true,
			customInstructions: "Focus on the naming discussion.",
		});
		await prompt("Pick a licence and a name together.", say("MIT and 'Tiny'."));
	},

	// Compactions: a manual compaction whose cut falls inside a turn (split turn, summarised with
	// the turn-prefix prompt in parallel), then a second compaction that updates the first summary.
	async compaction() {
		writeFileSync(join(cwd, "report.txt"), `${"A long line of the build report. ".repeat(60)}\n`);
		await start();
		await prompt("Hello, we will check the build report today.", say("Sure, tell me when."));
		await prompt(
			"Run the checks on report.txt and summarise.",
			call("bash", { command: "cat report.txt" }, { text: "Reading the report." }),
			call("bash", { command: "echo checks-ok" }),
			say("The report repeats one line; checks passed."),
		);
		await compact();
		await prompt(
			"Now explain what the report says in detail.",
			say(`The report says: ${"the build is fine and reproducible; ".repeat(14)}`),
		);
		await prompt(
			"And what should we do next?",
			say(`Next: ${"keep the report small, archive old runs, and re-run checks weekly; ".repeat(8)}`),
		);
		await compact("Keep the next steps.");
		await prompt("Remind me of the plan in one line.", say("Keep reports small and re-run checks weekly."));
	},

	// User bash executions (`!` and `!!`), custom messages (appended, next-turn and triggering a
	// turn), a model change (thinking from the other model becomes text) and thinking level changes,
	// user and tool-result images (sent to the vision model, placeholders for the other one),
	// a skill invoked with /skill:, a label and a session name.
	async interactive() {
		writeFileSync(join(cwd, "secret.txt"), "token=abc123\n");
		writeFileSync(join(cwd, "pixel.png"), Buffer.from(PIXEL_PNG, "base64"));
		await start();
		await session.executeBash("echo hello from the shell && pwd");
		await session.executeBash("cat secret.txt", undefined, { excludeFromContext: true });
		await session.executeBash("ls missing-dir");
		await prompt(
			"What did my shell commands show?",
			say("You printed a greeting and the working directory; the listing failed.", "Check the bash outputs."),
		);
		await session.executeBash("yes - | head -n 2200");
		await session.sendCustomMessage({ customType: "note", content: "Deploy window closes at 17:00.", display: true });
		await session.sendCustomMessage(
			{ customType: "reminder", content: [{ type: "text", text: "Remember the changelog." }], display: false, details: { source: "recorder" } },
			{ deliverAs: "nextTurn" },
		);
		await session.setModel(findModel("fake-plain"));
		await prompt("Summarise what you know so far.", say("Greeting printed, a listing failed, a long sequence ran; deploy closes at 17:00."));
		// Images: a user image and a tool-result image go to the vision model as image_url parts;
		// once the text-only model is back, pi-ai replaces them with placeholders.
		await queue(call("read", { path: "pixel.png" }), say("A single pixel, in both images."));
		await session.prompt("Compare this picture with pixel.png.", {
			images: [{ type: "image", mimeType: "image/png", data: PIXEL_PNG }],
		});
		await assertQueueEmpty("image prompt");
		await session.setModel(findModel("fake-reasoner"));
		session.setThinkingLevel("low");
		await prompt("/skill:release-check v1.2", call("bash", { command: "echo release ok" }, { thinking: "Follow the skill." }), say("Release v1.2 checks out."));
		await queue(say("Noted the extension's message.", "An extension spoke."));
		await session.sendCustomMessage(
			{ customType: "extension-event", content: "The CI pipeline finished green.", display: true },
			{ triggerTurn: true },
		);
		await assertQueueEmpty("custom message turn");
		session.setThinkingLevel("off");
		await prompt("Final check without thinking.", say("All good."));
		session.sessionManager.appendLabelChange(nthMessage("user", 2).id, "after-model-switch");
		session.setSessionName("Interactive features\nwith a newline");
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
