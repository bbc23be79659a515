// The extension's entry point as Pi drives it (node --test): handlers called with a context that
// Pi invalidates right after session_start, as print mode does when it finishes, and a push
// state holding several undelivered sessions. Its own process (node --test runs each file apart),
// since the extension reports each kind of problem once per process.
// The real Pi doing the same: tests/integrations/test_pi_print_mode.py.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

import contextlab from "../src/index.ts";
import { PushState } from "../src/state.ts";

// Every directory a test makes lies under this file's own, removed when its tests are done.
const SCRATCH = mkdtempSync(join(tmpdir(), "cl-ext-tests-"));
after(() => rmSync(SCRATCH, { recursive: true, force: true }));

type Handler = (event: unknown, ctx: unknown) => unknown;

async function server(answer: "401" | "never"): Promise<{ url: string; requests: number; close(): Promise<void> }> {
	const state = { url: "", requests: 0, close: async () => {} };
	const http: Server = createServer((req, res) => {
		state.requests += 1;
		req.resume();
		if (answer === "401") {
			res.writeHead(401, { "content-type": "application/json" });
			res.end("{}");
		}
	});
	await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
	state.url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
	state.close = () =>
		new Promise<void>((resolve) => {
			http.closeAllConnections();
			http.close(() => resolve());
		});
	return state;
}

/** An agent dir whose push state holds `count` undelivered sessions for `url`, and one more file. */
async function agentDir(url: string, count: number): Promise<{ dir: string; file: string }> {
	const dir = mkdtempSync(join(SCRATCH, "cl-ext-"));
	const sessions = join(dir, "sessions");
	mkdirSync(sessions);
	const state = new PushState(join(dir, "contextlab"));
	await state.load();
	for (let i = 0; i <= count; i++) {
		const file = join(sessions, `s${i}.jsonl`);
		writeFileSync(file, `${JSON.stringify({ type: "session", version: 3, id: `s${i}`, cwd: "/w" })}\n{"type":"message","id":"m"}\n`);
		if (i < count) state.set(file, url, { sessionId: `s${i}`, offset: null, prefixHash: "" });
	}
	await state.save();
	return { dir, file: join(sessions, `s${count}.jsonl`) };
}

/** Loads the extension as Pi does, with `env`, and collects what it writes to stderr. */
function load(env: Record<string, string>): { handlers: Map<string, Handler[]>; stderr: string[]; restore(): void } {
	const saved = { ...process.env };
	Object.assign(process.env, env);
	const stderr: string[] = [];
	const original = console.error;
	console.error = (...args: unknown[]) => stderr.push(args.join(" "));
	const handlers = new Map<string, Handler[]>();
	contextlab({ on: (event: string, handler: Handler) => handlers.set(event, [...(handlers.get(event) ?? []), handler]), appendEntry() {} });
	return {
		handlers,
		stderr,
		restore() {
			console.error = original;
			for (const key of Object.keys(env)) delete process.env[key];
			Object.assign(process.env, saved);
		},
	};
}

function staleAfterStart(file: string, sessionId: string): { ctx: unknown; invalidate(): void } {
	let stale = false;
	const check = () => {
		if (stale) throw new Error("This extension ctx is stale after session replacement or reload.");
	};
	const ctx = {
		sessionManager: {
			getSessionFile: () => (check(), file),
			getSessionId: () => (check(), sessionId),
			getBranch: () => (check(), []),
		},
	};
	return { ctx, invalidate: () => (stale = true) };
}

test("a context invalidated right after session_start is never touched again, and a refused token is said once", async () => {
	const refusing = await server("401");
	const { dir, file } = await agentDir(refusing.url, 6);
	const rejections: unknown[] = [];
	const onRejection = (reason: unknown) => rejections.push(reason);
	process.on("unhandledRejection", onRejection);
	const pi = load({ CONTEXTLAB_URL: refusing.url, CONTEXTLAB_TOKEN: "wrong", PI_CODING_AGENT_DIR: dir });
	try {
		const { ctx, invalidate } = staleAfterStart(file, "s6");
		for (const handler of pi.handlers.get("session_start") ?? []) handler({ type: "session_start" }, ctx);
		invalidate(); // Pi moved on before the push state finished loading
		for (const handler of pi.handlers.get("message_end") ?? []) assert.doesNotThrow(() => handler({}, ctx));
		const end = Date.now() + 3000;
		while (refusing.requests < 7 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
		await Promise.all((pi.handlers.get("session_shutdown") ?? []).map((handler) => handler({ type: "session_shutdown" }, ctx)));
		await new Promise((r) => setTimeout(r, 50));
		assert.deepEqual(rejections, []);
		assert.ok(refusing.requests >= 7, `every session was tried (${refusing.requests} requests)`);
		assert.deepEqual(
			pi.stderr.filter((line) => line.startsWith("contextlab:")),
			[`contextlab: ${refusing.url} refused the token (HTTP 401); nothing is pushed: check CONTEXTLAB_TOKEN or contextlab.token`],
		);
	} finally {
		pi.restore();
		process.off("unhandledRejection", onRejection);
		await refusing.close();
	}
});

test("at exit a server that never answers is abandoned within a second, and nothing is thrown", async () => {
	const silent = await server("never");
	const { dir, file } = await agentDir(silent.url, 3);
	const pi = load({ CONTEXTLAB_URL: silent.url, CONTEXTLAB_TOKEN: "t", PI_CODING_AGENT_DIR: dir });
	try {
		const { ctx } = staleAfterStart(file, "s3");
		for (const handler of pi.handlers.get("session_start") ?? []) handler({ type: "session_start" }, ctx);
		for (const handler of pi.handlers.get("message_end") ?? []) handler({}, ctx);
		const end = Date.now() + 3000;
		while (silent.requests < 4 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
		const started = Date.now();
		await Promise.all((pi.handlers.get("session_shutdown") ?? []).map((handler) => handler({ type: "session_shutdown" }, ctx)));
		const took = Date.now() - started;
		assert.ok(took < 1100, `the exit flush took ${took} ms`);
	} finally {
		pi.restore();
		await silent.close();
	}
});

test("a run that ends right after it starts still sends the earlier sessions' tails at exit", async () => {
	// Pi 0.80.2 `--no-session -p`: session_start without a file, then session_shutdown before the
	// checkpoints have loaded; the earlier files are resumed by the exit flush.
	const refusing = await server("401");
	const { dir } = await agentDir(refusing.url, 3);
	const pi = load({ CONTEXTLAB_URL: refusing.url, CONTEXTLAB_TOKEN: "t", PI_CODING_AGENT_DIR: dir });
	try {
		const ctx = { sessionManager: { getSessionFile: () => undefined, getSessionId: () => "none", getBranch: () => [] } };
		for (const handler of pi.handlers.get("session_start") ?? []) handler({ type: "session_start" }, ctx);
		await Promise.all((pi.handlers.get("session_shutdown") ?? []).map((handler) => handler({ type: "session_shutdown" }, ctx)));
		await new Promise((r) => setTimeout(r, 50));
		assert.ok(refusing.requests >= 3, `every earlier session was tried at exit (${refusing.requests} requests)`);
	} finally {
		pi.restore();
		await refusing.close();
	}
});
