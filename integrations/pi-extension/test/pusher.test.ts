// Unit tests of the pusher, the state file, the configuration and the prompt capture, against an
// in-process HTTP server that keeps the append endpoint's offset rule and, like contextlab, only
// complete lines (a torn last line is not held: the answer's offset stops before it)
// (node --test, Node >= 22.19).
// The end-to-end proof — the real Pi writing, the real contextlab storing — is
// tests/integrations/test_pi_extension.py.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

import { buildCapture, CAPTURE_TYPE, lastCaptureDigest, persistsItsPrompt, systemOfPayload } from "../src/capture.ts";
import { loadConfig } from "../src/config.ts";
import { DEFAULT_PUSH_SETTINGS, type ProblemKind, type PushCheckpoint, type PushSettings, SessionPusher } from "../src/pusher.ts";
import { PushState } from "../src/state.ts";

// Every directory a test makes lies under this file's own, removed when its tests are done.
const SCRATCH = mkdtempSync(join(tmpdir(), "cl-ext-tests-"));
after(() => rmSync(SCRATCH, { recursive: true, force: true }));

interface Fake {
	url: string;
	held: Map<string, Buffer>;
	requests: { offset: number; bytes: number; status: number }[];
	failNext: number; // answer this many requests with 500
	keepNothing: boolean; // answer 200 but keep none of the bytes
	maxBody: number; // larger bodies are answered 413
	digest: boolean; // answers carry tailBytes and tailSha256 (the 409/resume contract)
	delayMs: number; // answers this late
	inFlight: number; // requests being answered now
	mostInFlight: number;
	bodies: string[]; // "offset:sha256 of the body" of each request
	close(): Promise<void>;
}

async function fakeServer(port = 0): Promise<Fake> {
	const fake = { held: new Map<string, Buffer>(), requests: [], failNext: 0, keepNothing: false, maxBody: Infinity, digest: false, delayMs: 0, inFlight: 0, mostInFlight: 0, bodies: [] } as unknown as Fake;
	const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
		const chunks: Buffer[] = [];
		fake.inFlight += 1;
		fake.mostInFlight = Math.max(fake.mostInFlight, fake.inFlight);
		res.on("close", () => (fake.inFlight -= 1));
		req.on("data", (chunk: Buffer) => chunks.push(chunk));
		req.on("end", () => setTimeout(() => {
			const url = new URL(req.url ?? "/", "http://x");
			const match = /^\/api\/v1\/sessions\/([^/]+)\/lines$/.exec(url.pathname);
			const offset = Number(url.searchParams.get("offset"));
			const body = Buffer.concat(chunks);
			fake.bodies.push(`${offset}:${createHash("sha256").update(body).digest("hex")}`);
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
			if (body.length > fake.maxBody) return reply(413, { detail: "too large" });
			const id = decodeURIComponent(match[1]);
			const held = fake.held.get(id) ?? Buffer.alloc(0);
			const answer = (status: number, bytes: Buffer, statusWord: string) => {
				const tailBytes = Math.min(bytes.length, 4096);
				const tail = fake.digest
					? { tailBytes, tailSha256: createHash("sha256").update(bytes.subarray(bytes.length - tailBytes)).digest("hex") }
					: {};
				return reply(status, { sessionId: id, offset: bytes.length, status: statusWord, entries: 0, newEntries: 0, problems: [], ...tail });
			};
			const complete = (bytes: Buffer) => bytes.subarray(0, bytes.lastIndexOf(0x0a) + 1);
			if (fake.keepNothing) return answer(200, held, "unchanged");
			if (offset === 0 && body.length > 0) {
				const kept = complete(body);
				if (kept.length === 0) return answer(200, held, "failed");
				fake.held.set(id, kept);
				return answer(200, kept, held.length ? "revised" : "new");
			}
			if (offset !== held.length) return answer(409, held, "conflict");
			const next = complete(Buffer.concat([held, body]));
			fake.held.set(id, next);
			return answer(200, next, next.length > held.length ? "appended" : "unchanged");
		}, fake.delayMs).unref());
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
	const dir = mkdtempSync(join(SCRATCH, "cl-push-"));
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

function sleep(ms: number): Promise<void> {
	return new Promise((resolve) => setTimeout(resolve, ms));
}

function bigLine(id: string, bytes: number): string {
	return `${JSON.stringify({ type: "message", id, image: "A".repeat(bytes) })}\n`;
}

test("a line longer than the chunk limit is sent whole, alone, in one request ending at its newline", async () => {
	const server = await fakeServer();
	const file = sessionFile(5);
	appendFileSync(file, bigLine("img", 3 * 1024 * 1024)); // a base64 image, 3 MiB
	appendLines(file, 5, 5);
	const pusher = new SessionPusher({ file, sessionId: "big", settings: settings(server.url) });
	assert.equal((await pusher.flushNow(5000)).kind, "idle");
	assert.deepEqual(server.held.get("big"), readFileSync(file));
	const bodies = server.requests.filter((r) => r.bytes > 0);
	assert.ok(bodies.length <= 3, `few requests, not a loop: ${JSON.stringify(bodies)}`);
	assert.ok(bodies.some((r) => r.bytes > 3 * 1024 * 1024), "the long line went in one request");
	const bytes = readFileSync(file);
	for (const r of bodies) assert.equal(bytes[r.offset + r.bytes - 1], 0x0a, "every body ends on a newline");
	await server.close();
});

test("a torn last line is not sent until Pi completes it, however often Pi kicks", async () => {
	const server = await fakeServer();
	const file = sessionFile(5);
	const pusher = new SessionPusher({ file, sessionId: "torn", settings: settings(server.url) });
	await pusher.flushNow(5000);
	appendFileSync(file, '{"type":"message","id":"half'); // Pi mid-write, or killed mid-line
	for (let i = 0; i < 20; i++) {
		pusher.kick(0);
		await sleep(10);
	}
	const sentAfterTear = server.requests.length;
	await sleep(100);
	assert.equal(server.requests.length, sentAfterTear, "no request loop on a torn line");
	assert.ok(sentAfterTear <= 3, `the torn bytes are not sent again and again: ${sentAfterTear} requests`);
	appendFileSync(file, '"}\n');
	pusher.kick(0);
	await until(() => server.held.get("torn")?.equals(readFileSync(file)) ?? false, "the completed line");
	pusher.close();
	await server.close();
});

test("a line longer than the hard cap is reported once and stops that session without a request loop", async () => {
	const server = await fakeServer();
	const file = sessionFile(5);
	const before = readFileSync(file).length;
	appendFileSync(file, bigLine("huge", 50_000));
	appendLines(file, 5, 5);
	const warnings: string[] = [];
	const pusher = new SessionPusher({
		file,
		sessionId: "huge",
		settings: settings(server.url, { maxChunkBytes: 4096, maxLineBytes: 20_000 }),
		log: (level, message) => level === "warn" && warnings.push(message),
	});
	await pusher.flushNow(5000);
	for (let i = 0; i < 10; i++) {
		pusher.kick(0);
		await sleep(10);
	}
	await sleep(50);
	assert.equal(server.held.get("huge")?.length, before, "the lines before it are delivered");
	assert.ok(server.requests.length <= 3, `no loop: ${server.requests.length} requests`);
	assert.equal(warnings.length, 1, warnings.join("\n"));
	assert.match(warnings[0], /stays at byte \d+ .*longer than 20000 bytes/);
	pusher.close();
	await server.close();
});

test("a line the server refuses as too large (413) is reported once, not retried", async () => {
	const server = await fakeServer();
	server.maxBody = 10_000;
	const file = sessionFile(50);
	appendFileSync(file, bigLine("img", 20_000));
	const warnings: string[] = [];
	const pusher = new SessionPusher({
		file,
		sessionId: "s413",
		settings: settings(server.url, { maxChunkBytes: 1_000_000 }),
		log: (level, message) => level === "warn" && warnings.push(message),
	});
	pusher.kick(0);
	await until(() => warnings.length > 0, "the warning");
	for (let i = 0; i < 10; i++) {
		pusher.kick(0);
		await sleep(10);
	}
	const bytes = readFileSync(file);
	assert.equal(server.held.get("s413")?.length, bytes.lastIndexOf(0x0a, bytes.length - 2) + 1);
	assert.ok(server.requests.filter((r) => r.status === 413).length <= 3);
	assert.equal(warnings.length, 1);
	assert.match(warnings[0], /HTTP 413/);
	pusher.close();
	await server.close();
});

test("complete lines the server keeps none of are sent again only after a backoff", async () => {
	const server = await fakeServer();
	const file = sessionFile(5);
	const pusher = new SessionPusher({ file, sessionId: "stuck", settings: settings(server.url, { minBackoffMs: 50, maxBackoffMs: 200 }) });
	await pusher.flushNow(5000);
	server.keepNothing = true;
	appendLines(file, 3, 5);
	const start = server.requests.length;
	pusher.kick(0);
	await sleep(500);
	const repeats = server.requests.length - start;
	assert.ok(repeats >= 1 && repeats <= 6, `backed off, not a loop: ${repeats} requests in 500 ms`);
	server.keepNothing = false;
	await until(() => server.held.get("stuck")?.equals(readFileSync(file)) ?? false, "delivery once the server keeps them");
	pusher.close();
	await server.close();
});

test("while the server is unreachable, requests go out at the backoff's pace however often Pi writes", async () => {
	const gone = await fakeServer();
	const url = gone.url;
	await gone.close(); // nothing listens there: every connection is refused at once
	const file = sessionFile(5);
	let attempts = 0;
	const pusher = new SessionPusher({
		file,
		sessionId: "down",
		settings: settings(url, { minBackoffMs: 100, maxBackoffMs: 100 }),
		fetchImpl: (input, init) => {
			attempts += 1;
			return fetch(input, init);
		},
	});
	pusher.kick(0);
	for (let i = 0; i < 50; i++) {
		appendLines(file, 1, 100 + i);
		pusher.kick(); // Pi writes a line and kicks, as on every message
		await sleep(10);
	}
	pusher.close();
	assert.ok(attempts >= 2 && attempts <= 8, `about one request per backoff in 500 ms, not a loop: ${attempts}`);
});

/** Replaces line `n` (0-based) of the file; `grow` characters longer, or the same length. */
function editLine(file: string, n: number, grow: number): string {
	const lines = readFileSync(file, "utf8").split("\n");
	const entry = JSON.parse(lines[n]);
	assert.ok(grow || entry.text.includes("x"), "a line that changes");
	entry.text = grow ? `${entry.text}${"y".repeat(grow)}` : entry.text.replace(/x/g, "z");
	lines[n] = JSON.stringify(entry);
	return lines.join("\n");
}

test("a file rewritten after its first 4 KiB (a line of another length) is sent again from offset 0", async () => {
	const server = await fakeServer();
	const file = sessionFile(400); // about 20 KiB
	const pusher = new SessionPusher({ file, sessionId: "rw", settings: settings(server.url) });
	await pusher.flushNow(5000);
	const rewritten = editLine(file, 200, 7); // at about 10 KiB: not in the first 4 KiB, nor the last
	assert.ok(rewritten.indexOf('"e200"') > 4096 && rewritten.indexOf('"e200"') < rewritten.length - 8192);
	writeFileSync(file, rewritten);
	appendLines(file, 3, 400);
	await pusher.flushNow(5000);
	assert.deepEqual(server.held.get("rw"), readFileSync(file));
	assert.ok(server.requests.some((r) => r.offset === 0 && r.bytes > 0), "sent again from 0");
	await server.close();
});

test("a same-length edit in the middle is caught by the whole-prefix check of the next Pi run", async () => {
	const server = await fakeServer();
	const file = sessionFile(400);
	let saved: PushCheckpoint | null = null;
	const first = new SessionPusher({ file, sessionId: "mid", settings: settings(server.url), onCheckpoint: (c) => (saved = c) });
	await first.flushNow(5000);
	assert.ok(saved);
	writeFileSync(file, editLine(file, 230, 0)); // same length, same head and tail
	appendLines(file, 3, 400);
	const next = new SessionPusher({ file, sessionId: "mid", settings: settings(server.url), checkpoint: saved });
	await next.flushNow(5000);
	assert.deepEqual(server.held.get("mid"), readFileSync(file));
	await server.close();
});

test("a file renamed over the session file is checked whole by the same pusher", async () => {
	const server = await fakeServer();
	const file = sessionFile(400);
	const pusher = new SessionPusher({ file, sessionId: "mv", settings: settings(server.url) });
	await pusher.flushNow(5000);
	const replacement = `${file}.new`;
	writeFileSync(replacement, editLine(file, 230, 0));
	renameSync(replacement, file); // as an editor that writes a new file and renames it saves
	appendLines(file, 3, 400);
	await pusher.flushNow(5000);
	assert.deepEqual(server.held.get("mv"), readFileSync(file));
	await server.close();
});

test("a file that only grows is sent on from its checkpoint, never again from 0", async () => {
	const server = await fakeServer();
	const file = sessionFile(400);
	let saved: PushCheckpoint | null = null;
	const pusher = new SessionPusher({ file, sessionId: "grow", settings: settings(server.url), onCheckpoint: (c) => (saved = c) });
	for (let round = 0; round < 5; round++) {
		appendLines(file, 20, 400 + round * 20);
		await pusher.flushNow(5000);
	}
	appendLines(file, 5, 600);
	await new SessionPusher({ file, sessionId: "grow", settings: settings(server.url), checkpoint: saved }).flushNow(5000);
	assert.deepEqual(server.held.get("grow"), readFileSync(file));
	assert.equal(server.requests.filter((r) => r.offset === 0 && r.bytes > 0).length, 1, "only the first send");
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

test("the state keeps checkpoints across restarts, per server URL", async () => {
	const dir = join(mkdtempSync(join(SCRATCH, "cl-state-")), "contextlab");
	const state = new PushState(dir, 1);
	await state.load();
	state.set("/f.jsonl", "http://a", { sessionId: "s", offset: 42, prefixHash: "h" });
	await state.save();
	const again = new PushState(dir);
	await again.load();
	assert.equal(again.get("/f.jsonl", "http://a")?.offset, 42);
	assert.equal(again.get("/f.jsonl", "http://b"), null);
});

test("two Pi processes updating the state at once keep each other's checkpoints", async () => {
	const dir = join(mkdtempSync(join(SCRATCH, "cl-state-")), "contextlab");
	const writer = join(import.meta.dirname, "state-writer.ts");
	const run = (name: string) =>
		new Promise<void>((resolve, reject) => {
			const child = spawn(process.execPath, [writer, dir, name, "60"], { stdio: ["ignore", "ignore", "pipe"] });
			let stderr = "";
			child.stderr.on("data", (chunk) => (stderr += chunk));
			child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`writer ${name} failed: ${stderr}`))));
		});
	await Promise.all([run("left"), run("right")]);
	const state = new PushState(dir);
	await state.load();
	const missing: string[] = [];
	for (const name of ["left", "right"]) {
		for (let i = 0; i < 60; i++) {
			const found = state.get(`/sessions/${name}-${i}.jsonl`, "http://contextlab");
			if (found?.offset !== i + 1) missing.push(`${name}-${i}`);
		}
	}
	assert.deepEqual(missing, [], "every checkpoint of both processes is kept");
});

test("loading the state keeps a checkpoint set before the load finished, and merges the rest", async () => {
	const dir = join(mkdtempSync(join(SCRATCH, "cl-state-")), "contextlab");
	const earlier = new PushState(dir, 1);
	await earlier.load();
	earlier.set("/old.jsonl", "http://a", { sessionId: "old", offset: 10, prefixHash: "h" });
	earlier.set("/current.jsonl", "http://a", { sessionId: "cur", offset: 5, prefixHash: "h" });
	await earlier.save();
	await sleep(5);
	const state = new PushState(dir, 1);
	const loading = state.load(); // Pi's handlers may run before this resolves
	state.set("/current.jsonl", "http://a", { sessionId: "cur", offset: 99, prefixHash: "h2" });
	state.set("/new.jsonl", "http://a", { sessionId: "new", offset: 7, prefixHash: "h" });
	await loading;
	assert.equal(state.get("/current.jsonl", "http://a")?.offset, 99, "the newer checkpoint wins");
	assert.equal(state.get("/new.jsonl", "http://a")?.offset, 7, "not wiped by the load");
	assert.equal(state.get("/old.jsonl", "http://a")?.offset, 10, "the stored one is merged in");
	await state.save();
	const after = new PushState(dir);
	await after.load();
	assert.deepEqual(
		["/current.jsonl", "/new.jsonl", "/old.jsonl"].map((f) => after.get(f, "http://a")?.offset),
		[99, 7, 10],
	);
});

test("the single state file of earlier versions is taken over and removed", async () => {
	const dir = join(mkdtempSync(join(SCRATCH, "cl-state-")), "contextlab");
	mkdirSync(dir, { recursive: true });
	const legacy = join(dir, "push-state.json");
	const entry = { sessionId: "s", offset: 42, prefixHash: "h", url: "http://a", updatedAt: "2026-01-01T00:00:00.000Z" };
	writeFileSync(legacy, JSON.stringify({ "/f.jsonl": entry }));
	const state = new PushState(dir);
	await state.load();
	assert.equal(state.get("/f.jsonl", "http://a")?.offset, 42);
	assert.equal(existsSync(legacy), false);
	const again = new PushState(dir);
	await again.load();
	assert.equal(again.get("/f.jsonl", "http://a")?.offset, 42);
});

test("without a URL and a token the extension is not configured", () => {
	const dir = mkdtempSync(join(SCRATCH, "cl-agent-"));
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

test("a URL without a scheme is a problem said once, not a silent no-op", () => {
	const dir = mkdtempSync(join(SCRATCH, "cl-agent-"));
	for (const url of ["localhost:8000", "127.0.0.1:8000", "contextlab.example.com", "ftp://h"]) {
		const config = loadConfig({ PI_CODING_AGENT_DIR: dir, CONTEXTLAB_URL: url, CONTEXTLAB_TOKEN: "t" });
		assert.ok(config && "problem" in config, url);
		assert.match(config.problem, new RegExp(`^CONTEXTLAB_URL "${url.replace(/[.]/g, "\\.")}" `));
	}
	const good = loadConfig({ PI_CODING_AGENT_DIR: dir, CONTEXTLAB_URL: "https://h.example/cl/", CONTEXTLAB_TOKEN: "t" });
	assert.ok(good && "url" in good && good.url === "https://h.example/cl/");
});

test("a 409 whose tail digest differs from this file's bytes sends the file again from 0, never from the server's offset", async () => {
	const server = await fakeServer();
	server.digest = true;
	const file = sessionFile(20);
	const mine = readFileSync(file);
	// Another writer's line after the first 10 of ours: the server's offset is a line end of its
	// bytes, in the middle of one of this file's lines.
	const tenth = mine.indexOf(0x0a, 0);
	let cut = tenth;
	for (let i = 1; i < 10; i++) cut = mine.indexOf(0x0a, cut + 1);
	const theirs = Buffer.concat([mine.subarray(0, cut + 1), Buffer.from('{"type":"message","id":"bob","text":"x"}\n')]);
	server.held.set("two", theirs);
	assert.notEqual(mine[theirs.length - 1], 0x0a, "the server's offset falls mid-line in this file");
	const pusher = new SessionPusher({ file, sessionId: "two", settings: settings(server.url) });
	await pusher.flushNow(5000);
	assert.deepEqual(server.held.get("two"), mine, "the file was sent whole from 0");
	const offsets = server.requests.map((r) => r.offset);
	assert.ok(!offsets.includes(theirs.length), `never resumed at the server's offset: ${offsets}`);
	assert.ok(offsets.includes(0));
	await server.close();
});

test("a 409 at a line end of this file whose digest differs (same length, other bytes) also restarts from 0", async () => {
	const server = await fakeServer();
	server.digest = true;
	const file = sessionFile(20);
	const mine = readFileSync(file);
	const cut = mine.indexOf(0x0a, 300) + 1;
	const theirs = Buffer.from(mine.subarray(0, cut));
	theirs[cut - 3] = theirs[cut - 3] === 0x78 ? 0x79 : 0x78; // one byte of the last held line
	server.held.set("same", theirs);
	const pusher = new SessionPusher({ file, sessionId: "same", settings: settings(server.url) });
	await pusher.flushNow(5000);
	assert.deepEqual(server.held.get("same"), mine);
	assert.ok(server.requests.some((r) => r.offset === 0 && r.bytes === mine.length));
	await server.close();
});

test("a 409 whose digest matches resumes from the server's offset, without a byte sent twice", async () => {
	const server = await fakeServer();
	server.digest = true;
	const file = sessionFile(40);
	const mine = readFileSync(file);
	const cut = mine.indexOf(0x0a, 1000) + 1;
	server.held.set("ok", mine.subarray(0, cut));
	const pusher = new SessionPusher({ file, sessionId: "ok", settings: settings(server.url) });
	await pusher.flushNow(5000);
	assert.deepEqual(server.held.get("ok"), mine);
	assert.ok(server.requests.every((r) => r.offset !== 0), JSON.stringify(server.requests));
	assert.equal(server.requests.filter((r) => r.status === 200).reduce((n, r) => n + r.bytes, 0), mine.length - cut);
	await server.close();
});

test("the exit flush waits for the timer's request in flight instead of sending its bytes again", async () => {
	const server = await fakeServer();
	server.delayMs = 300;
	const file = sessionFile(30);
	const pusher = new SessionPusher({ file, sessionId: "one", settings: settings(server.url) });
	await pusher.flushNow(5000); // delivered; the checkpoint is known
	appendLines(file, 5, 30);
	pusher.kick(0);
	await until(() => server.inFlight === 1, "the timer's push to be in flight");
	appendLines(file, 5, 35);
	const outcome = await pusher.flushNow(3000);
	assert.equal(outcome.kind, "idle");
	assert.deepEqual(server.held.get("one"), readFileSync(file));
	assert.equal(server.mostInFlight, 1, "never two requests of one file at once");
	assert.equal(new Set(server.bodies).size, server.bodies.length, `no request repeated: ${server.bodies}`);
	pusher.close();
	await server.close();
});

test("at exit a request that gets no answer is abandoned within the flush's time and aborted", async () => {
	const server = await fakeServer();
	const file = sessionFile(10);
	const pusher = new SessionPusher({ file, sessionId: "hang", settings: settings(server.url) });
	await pusher.flushNow(5000);
	server.delayMs = 60_000; // never, as far as Pi is concerned
	appendLines(file, 3, 10);
	pusher.kick(0);
	await until(() => server.inFlight === 1, "the push to be in flight");
	const started = Date.now();
	await pusher.flushNow(300);
	pusher.close();
	assert.ok(Date.now() - started < 600, `flushNow took ${Date.now() - started} ms`);
	await until(() => server.inFlight === 0, "the aborted request's connection to close", 2000);
	assert.equal(server.mostInFlight, 1);
	await server.close();
});

test("each kind of problem is reported to the run's reporter (which says it once), not logged per session", async () => {
	const server = await fakeServer();
	const gone = await fakeServer();
	const goneUrl = gone.url;
	await gone.close();
	const reports: [ProblemKind, string][] = [];
	const warnings: string[] = [];
	const common = { report: (kind: ProblemKind, detail: string) => reports.push([kind, detail]), log: (level: string, message: string) => level === "warn" && warnings.push(message) };
	for (let i = 0; i < 3; i++) {
		await new SessionPusher({ file: sessionFile(3), sessionId: `u${i}`, settings: settings(goneUrl), ...common }).pushOnce(1000);
		await new SessionPusher({ file: sessionFile(3), sessionId: `t${i}`, settings: { ...settings(server.url), token: "wrong" }, ...common }).pushOnce(1000);
	}
	server.failNext = 1;
	await new SessionPusher({ file: sessionFile(3), sessionId: "e", settings: settings(server.url), ...common }).pushOnce(1000);
	assert.deepEqual(
		reports.map(([kind]) => kind),
		["unreachable", "token-refused", "unreachable", "token-refused", "unreachable", "token-refused", "server-error"],
	);
	assert.equal(reports[0][1], "connection refused");
	assert.deepEqual(warnings, [], "nothing else on stderr");
	await server.close();
});
