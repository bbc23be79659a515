// Unit tests of the pusher, the state file, the configuration and the prompt capture, against an
// in-process HTTP server that keeps the append endpoint's offset rule (node --test, Node >= 22.19).
// The end-to-end proof — the real Pi writing, the real contextlab storing — is
// tests/integrations/test_pi_extension.py.

import assert from "node:assert/strict";
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { buildCapture, CAPTURE_TYPE, lastCaptureDigest, persistsItsPrompt, systemOfPayload } from "../src/capture.ts";
import { loadConfig } from "../src/config.ts";
import { DEFAULT_PUSH_SETTINGS, type PushSettings, SessionPusher } from "../src/pusher.ts";
import { PushState } from "../src/state.ts";

interface Fake {
	url: string;
	held: Map<string, Buffer>;
	requests: { offset: number; bytes: number; status: number }[];
	failNext: number; // answer this many requests with 500
	close(): Promise<void>;
}

async function fakeServer(port = 0): Promise<Fake> {
	const fake = { held: new Map<string, Buffer>(), requests: [], failNext: 0 } as unknown as Fake;
	const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
		const chunks: Buffer[] = [];
		req.on("data", (chunk: Buffer) => chunks.push(chunk));
		req.on("end", () => {
			const url = new URL(req.url ?? "/", "http://x");
			const match = /^\/api\/v1\/sessions\/([^/]+)\/lines$/.exec(url.pathname);
			const offset = Number(url.searchParams.get("offset"));
			const body = Buffer.concat(chunks);
			const reply = (status: number, object: unknown) => {
				fake.requests.push({ offset, bytes: body.length, status });
				res.writeHead(status, { "content-type": "application/json" });
				res.end(JSON.stringify(object));
			};
			if (req.headers.authorization !== "Bearer secret" || !match) return reply(401, {});
			if (fake.failNext > 0) {
				fake.failNext -= 1;
				return reply(500, { detail: "boom" });
			}
			const id = decodeURIComponent(match[1]);
			const held = fake.held.get(id) ?? Buffer.alloc(0);
			const answer = (status: number, bytes: Buffer, statusWord: string) =>
				reply(status, { sessionId: id, offset: bytes.length, status: statusWord, entries: 0, newEntries: 0, problems: [] });
			if (offset === 0 && body.length > 0) {
				fake.held.set(id, body);
				return answer(200, body, held.length ? "revised" : "new");
			}
			if (offset !== held.length) return answer(409, held, "conflict");
			const next = Buffer.concat([held, body]);
			fake.held.set(id, next);
			return answer(200, next, body.length ? "appended" : "unchanged");
		});
	});
	await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
	fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	fake.close = () =>
		new Promise<void>((resolve) => {
			server.closeAllConnections();
			server.close(() => resolve());
		});
	return fake;
}

function settings(url: string, extra: Partial<PushSettings> = {}): PushSettings {
	return { ...DEFAULT_PUSH_SETTINGS, url, token: "secret", minBackoffMs: 5, maxBackoffMs: 40, debounceMs: 1, ...extra };
}

function sessionFile(lines: number, start = 0): string {
	const dir = mkdtempSync(join(tmpdir(), "cl-push-"));
	const file = join(dir, "s.jsonl");
	writeFileSync(file, "");
	appendLines(file, lines, start);
	return file;
}

function appendLines(file: string, count: number, start = 0): void {
	for (let i = start; i < start + count; i++) appendFileSync(file, `${JSON.stringify({ type: "message", id: `e${i}`, text: "x".repeat(i % 50) })}\n`);
}

async function until(predicate: () => boolean, what: string, ms = 5000): Promise<void> {
	const end = Date.now() + ms;
	while (!predicate()) {
		if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
		await new Promise((r) => setTimeout(r, 10));
	}
}

test("it delivers the whole file in line-aligned chunks and stays idle afterwards", async () => {
	const server = await fakeServer();
	const file = sessionFile(200);
	const pusher = new SessionPusher({ file, sessionId: "s1", settings: settings(server.url, { maxChunkBytes: 1000 }) });
	assert.equal((await pusher.flushNow(5000)).kind, "idle");
	assert.deepEqual(server.held.get("s1"), readFileSync(file));
	// Every request after the probe ends on a line boundary.
	const bodies = server.requests.filter((r) => r.bytes > 0);
	assert.ok(bodies.length > 5, `expected several chunks, got ${bodies.length}`);
	let offset = 0;
	const bytes = readFileSync(file);
	for (const r of bodies) {
		assert.equal(r.offset, offset);
		offset += r.bytes;
		assert.equal(bytes[offset - 1], 0x0a);
	}
	const before = server.requests.length;
	assert.equal((await pusher.flushNow(1000)).kind, "idle");
	assert.equal(server.requests.length, before, "an idle pusher sends nothing");
	await server.close();
});

test("it resumes from the offset the server answers with 409, never sending a line twice", async () => {
	const server = await fakeServer();
	const file = sessionFile(50);
	const bytes = readFileSync(file);
	server.held.set("s2", bytes.subarray(0, bytes.indexOf(0x0a, 500) + 1));
	const pusher = new SessionPusher({ file, sessionId: "s2", settings: settings(server.url) });
	await pusher.flushNow(5000);
	assert.deepEqual(server.held.get("s2"), bytes);
	assert.equal(server.requests[0].status, 409, "the first request probes the server's offset");
	assert.ok(server.requests.every((r) => r.offset !== 0), "offset 0 (a new revision) is never sent");
	await server.close();
});

test("it backs off on server errors and delivers everything once the server answers again", async () => {
	const server = await fakeServer();
	const file = sessionFile(30);
	server.failNext = 3;
	const pusher = new SessionPusher({ file, sessionId: "s3", settings: settings(server.url) });
	pusher.kick(0);
	await until(() => server.held.get("s3")?.equals(readFileSync(file)) ?? false, "delivery after 500s");
	appendLines(file, 10, 30);
	pusher.kick();
	await until(() => server.held.get("s3")?.equals(readFileSync(file)) ?? false, "the appended lines");
	assert.equal(server.requests.filter((r) => r.status === 500).length, 3);
	pusher.close();
	await server.close();
});

test("it survives the server being down and delivers when it comes back on the same port", async () => {
	const first = await fakeServer();
	const port = Number(new URL(first.url).port);
	const file = sessionFile(20);
	const pusher = new SessionPusher({ file, sessionId: "s4", settings: settings(first.url) });
	await pusher.flushNow(5000);
	await first.close(); // down: connections refused
	appendLines(file, 20, 20);
	const outcome = await pusher.pushOnce(1000);
	assert.equal(outcome.kind, "retry");
	const second = await fakeServer(port); // restarted, holding what the first one acknowledged
	second.held.set("s4", first.held.get("s4")!);
	pusher.kick(0);
	await until(() => second.held.get("s4")?.equals(readFileSync(file)) ?? false, "delivery after restart");
	pusher.close();
	await second.close();
});

test("a rewritten file (shorter, or its first bytes changed) is sent again from offset 0", async () => {
	const server = await fakeServer();
	const file = sessionFile(20);
	const pusher = new SessionPusher({ file, sessionId: "s5", settings: settings(server.url) });
	await pusher.flushNow(5000);
	writeFileSync(file, readFileSync(file).toString().replace('"e0"', '"E0"')); // same length, new prefix
	await pusher.flushNow(5000);
	assert.deepEqual(server.held.get("s5"), readFileSync(file));
	assert.equal(server.requests.at(-1)?.offset, 0);
	await server.close();
});

test("a refused token stops pushing that session instead of retrying forever", async () => {
	const server = await fakeServer();
	const file = sessionFile(3);
	const pusher = new SessionPusher({ file, sessionId: "s6", settings: { ...settings(server.url), token: "wrong" } });
	assert.equal((await pusher.pushOnce(1000)).kind, "stopped");
	assert.match(pusher.stopped ?? "", /HTTP 401/);
	await server.close();
});

test("the state file keeps checkpoints across restarts, per server URL", async () => {
	const dir = mkdtempSync(join(tmpdir(), "cl-state-"));
	const state = new PushState(join(dir, "contextlab", "push-state.json"), 1);
	await state.load();
	state.set("/f.jsonl", "http://a", { sessionId: "s", offset: 42, prefixHash: "h" });
	await state.save();
	const again = new PushState(join(dir, "contextlab", "push-state.json"));
	await again.load();
	assert.equal(again.get("/f.jsonl", "http://a")?.offset, 42);
	assert.equal(again.get("/f.jsonl", "http://b"), null);
});

test("without a URL and a token the extension is not configured", () => {
	const dir = mkdtempSync(join(tmpdir(), "cl-agent-"));
	assert.equal(loadConfig({ PI_CODING_AGENT_DIR: dir }), null);
	assert.equal(loadConfig({ PI_CODING_AGENT_DIR: dir, CONTEXTLAB_URL: "http://x" }), null);
	writeFileSync(join(dir, "settings.json"), JSON.stringify({ contextlab: { url: "http://h:1", token: "t", capturePrompts: false } }));
	const fromSettings = loadConfig({ PI_CODING_AGENT_DIR: dir });
	assert.deepEqual(fromSettings && { url: fromSettings.url, token: fromSettings.token, capture: fromSettings.capturePrompts }, {
		url: "http://h:1",
		token: "t",
		capture: false,
	});
	assert.equal(loadConfig({ PI_CODING_AGENT_DIR: dir, CONTEXTLAB_TOKEN: "env" })?.token, "env");
});

test("the capture takes the system prompt and tools from the payload as sent", () => {
	const payload = {
		model: "m",
		messages: [{ role: "developer", content: "You are an expert." }, { role: "user", content: "hi" }],
		tools: [{ type: "function", function: { name: "read", parameters: {} } }],
	};
	const capture = buildCapture({ payload, model: { api: "openai-completions", provider: "p", id: "m" }, options: { cwd: "/w", contextFiles: [{ path: "/w/AGENTS.md", content: "c" }] } });
	assert.equal(capture?.systemPrompt, "You are an expert.");
	assert.deepEqual(capture?.system, payload.messages[0]);
	assert.deepEqual(capture?.tools, payload.tools);
	assert.deepEqual((capture?.options as { contextFiles: unknown }).contextFiles, [{ path: "/w/AGENTS.md", content: "c" }]);
	assert.equal(systemOfPayload({ system: [{ type: "text", text: "A" }], messages: [] })?.text, "A");
	const summary = { messages: [{ role: "system", content: "You are a context summarization assistant. ..." }] };
	assert.equal(buildCapture({ payload: summary, model: undefined, options: undefined }), null);
	const branch = [{ type: "custom", customType: CAPTURE_TYPE, data: capture }];
	assert.equal(lastCaptureDigest(branch), capture?.digest);
	assert.equal(persistsItsPrompt([{ type: "message", message: { role: "system" } }]), true);
	assert.equal(persistsItsPrompt(branch), false);
});
