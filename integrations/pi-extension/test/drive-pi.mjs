// Drives a real Pi (its SDK) with the contextlab extension installed the documented way (the
// agent dir's settings.json lists this extension's folder), for tests/integrations/.
//
// Usage: node drive-pi.mjs     (one JSON command per stdin line, one JSON answer per stdout line)
// Environment: PI_DIST (the pi-coding-agent dist folder of the Pi under test), FAKE_PORT (the
// scripted chat-completions server), PI_CODING_AGENT_DIR, HOME, SCENARIO_CWD, and the extension's
// own CONTEXTLAB_* variables or settings.
//
// Commands:
//   {"op": "start"}                                   -> {sessionFile, sessionId}
//   {"op": "prompt", "text": "...", "answers": [...]} -> {leafId}   (answers: fake-server script)
//   {"op": "tools", "names": ["read", "bash"]}        -> {}         (changes the active tools)
//   {"op": "quit"}                                    -> {}         (disposes, exits)

import { createInterface } from "node:readline";

const dist = process.env.PI_DIST;
const port = process.env.FAKE_PORT;
const cwd = process.env.SCENARIO_CWD;
const agentDir = process.env.PI_CODING_AGENT_DIR;
const { createAgentSession } = await import(`${dist}/index.js`);

let session;

async function queue(answers) {
	const response = await fetch(`http://127.0.0.1:${port}/__queue`, { method: "POST", body: JSON.stringify(answers) });
	if (!response.ok) throw new Error(`queueing answers failed: ${response.status}`);
}

const commands = {
	async start() {
		({ session } = await createAgentSession({ cwd, agentDir }));
		// Pi emits session_start to extensions when the session is bound; the SDK's plain session
		// does it on the first prompt at the latest. Either way the extension starts from there.
		await session.bindExtensions?.({});
		const sm = session.sessionManager;
		return { sessionFile: sm.getSessionFile(), sessionId: sm.getSessionId() };
	},
	async prompt({ text, answers }) {
		await queue(answers ?? []);
		await session.prompt(text);
		const last = session.messages?.at?.(-1) ?? session.agent.state.messages.at(-1);
		if (last?.role === "assistant" && (last.stopReason === "error" || last.stopReason === "aborted")) {
			throw new Error(`prompt ended with ${last.stopReason}: ${last.errorMessage}`);
		}
		return { leafId: session.sessionManager.getLeafId() };
	},
	async tools({ names }) {
		session.setActiveToolsByName(names);
		return {};
	},
	async quit() {
		await session?.dispose?.();
		setTimeout(() => process.exit(0), 10);
		return {};
	},
};

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
	if (!line.trim()) continue;
	const command = JSON.parse(line);
	try {
		const result = await commands[command.op](command);
		process.stdout.write(`${JSON.stringify({ ok: true, ...result })}\n`);
	} catch (error) {
		process.stdout.write(`${JSON.stringify({ ok: false, error: String(error?.stack ?? error) })}\n`);
	}
}
