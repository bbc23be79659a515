// Pushes one session file's bytes to contextlab's append endpoint:
//
//   POST {url}/api/v1/sessions/{sessionId}/lines?offset=N   (body: the file's bytes from byte N)
//   -> {sessionId, offset, status, entries, newEntries, problems, tailBytes, tailSha256}
//      (409: same object, other offset)
//
// `offset` is always at a line end of the bytes the server holds, `tailBytes` = min(offset, 4096)
// and `tailSha256` the sha256 (lowercase hex) of the server's bytes [offset - tailBytes, offset).
// An offset is taken only when this file's own bytes there agree (a line end, the same digest);
// otherwise the file differs from what the server holds and is sent again from 0, never from
// the middle of one of its lines. (A server that sends no digest is trusted on its offset.)
//
// The server's `offset` is the only truth about what it holds, so the "queue" is the session file
// itself: nothing is buffered in memory beyond one chunk, nothing is lost while the server is
// away, and a restart resumes from whatever offset the server answers. Every network call runs
// off the agent's path (handlers only schedule work), with a timeout, and failures back off
// exponentially with jitter up to a cap.

import { createHash, type Hash } from "node:crypto";
import { open, stat } from "node:fs/promises";

export interface PushSettings {
	url: string;
	token: string;
	/** Usual largest body of one request; a chunk is cut after its last newline. */
	maxChunkBytes: number;
	/**
	 * Largest single line sent. A line longer than `maxChunkBytes` (a base64 image in a tool
	 * result) is sent alone, in one request that ends at its newline; a longer one than this can
	 * never be sent whole, so the session stops at it (reported once). contextlab refuses bodies
	 * larger than its CONTEXTLAB_API_MAX_PUSH_BYTES, 64 MiB by default.
	 */
	maxLineBytes: number;
	minBackoffMs: number;
	maxBackoffMs: number;
	requestTimeoutMs: number;
	/** Debounce between a kick (Pi wrote something) and the flush. */
	debounceMs: number;
}

export const DEFAULT_PUSH_SETTINGS: Omit<PushSettings, "url" | "token"> = {
	maxChunkBytes: 1024 * 1024,
	maxLineBytes: 64 * 1024 * 1024,
	minBackoffMs: 500,
	maxBackoffMs: 60_000,
	requestTimeoutMs: 15_000,
	debounceMs: 150,
};

/**
 * What is remembered per session file between flushes and across Pi restarts: how much of the
 * file the server holds, and fingerprints of those bytes, to tell a file that only grew (send
 * from `offset`) from one rewritten under the same name (send it again from 0, a new revision).
 */
export interface PushCheckpoint {
	sessionId: string;
	/** Bytes of the file the server acknowledged holding. */
	offset: number;
	/** sha256 of the file's first min(offset, WINDOW_BYTES) bytes (its header line, at least). */
	prefixHash: string;
	/** sha256 of the WINDOW_BYTES before `offset` (the last lines the server holds). */
	tailHash?: string;
	/** sha256 of the whole first `offset` bytes. */
	fullHash?: string;
}

/**
 * The rewrite check. Before each request the head and the tail window of the acknowledged bytes
 * are compared (8 KiB read, whatever the file's size): Pi's own rewrites (a session migrated to
 * a newer format when opened, an unreadable file started over) always change the header line,
 * and any rewrite that changes the length of a line anywhere before the checkpoint moves the tail
 * window. The whole acknowledged prefix is compared once per pusher (each Pi start), before its
 * first request, and again when the path names another file (a new inode: written elsewhere
 * and renamed over). What only that full check sees, a same-length edit in the middle of a
 * file, is caught at the next Pi start; reading a whole session file before every request would
 * cost the agent's machine that much I/O per message.
 */
export const WINDOW_BYTES = 4096;

export type PushOutcome =
	| { kind: "idle" } // the server holds every complete line of the file (or cannot take the next)
	| { kind: "sent"; offset: number } // progress: the next request starts elsewhere
	| { kind: "retry"; reason: string; delayMs: number }
	| { kind: "stopped"; reason: string }; // permanent for this session (refused, bad token)

export interface PushLog {
	(level: "debug" | "warn", message: string): void;
}

/**
 * The kinds of problem worth one line on stderr per Pi run (not one per session or request):
 * the server cannot be reached, it refused the token, it refused a session (not a member of its
 * project), it failed (5xx).
 */
export type ProblemKind = "unreachable" | "token-refused" | "not-member" | "server-error";

export interface ProblemReport {
	(kind: ProblemKind, detail: string): void;
}

type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

interface ServerAnswer {
	offset?: unknown;
	status?: unknown;
	tailBytes?: unknown;
	tailSha256?: unknown;
}

export class SessionPusher {
	readonly file: string;
	readonly sessionId: string;
	private settings: PushSettings;
	private fetchImpl: FetchLike;
	private log: PushLog;
	private report: ProblemReport;
	private onCheckpoint: (checkpoint: PushCheckpoint) => void;
	private checkpoint: PushCheckpoint | null;
	private chunkLimit: number;
	private failures = 0;
	private timer: ReturnType<typeof setTimeout> | null = null;
	/**
	 * The one loop that sends this file's requests (a timer's drain or the exit flush): never two
	 * at once, so no request repeats bytes another one is sending.
	 */
	private running: Promise<unknown> | null = null;
	private again = false;
	private stoppedReason: string | null = null;
	private closed = false;
	/** Exit flush under way: the timer's loop stops after its request in flight. */
	private flushing = false;
	/** Aborts the request in flight (at Pi's exit, when the flush's time is up). */
	private inFlight: AbortController | null = null;
	/** The last request went from 0 because the server's answer disagreed with this file. */
	private resentFromZero = false;
	/** Where the file holds a line too long to send: nothing is sent from there (until a rewrite). */
	private blockedAt: number | null = null;
	/** sha256 state of the file's first `hashedTo` bytes (the acknowledged ones), kept up to date. */
	private prefixHasher: Hash | null = null;
	private hashedTo = 0;
	/** This pusher compared the whole acknowledged prefix with `fullHash`, for this inode. */
	private verifiedInode: number | null = null;

	constructor(options: {
		file: string;
		sessionId: string;
		settings: PushSettings;
		checkpoint?: PushCheckpoint | null;
		fetchImpl?: FetchLike;
		log?: PushLog;
		report?: ProblemReport;
		onCheckpoint?: (checkpoint: PushCheckpoint) => void;
	}) {
		this.file = options.file;
		this.sessionId = options.sessionId;
		this.settings = options.settings;
		this.checkpoint = options.checkpoint?.sessionId === options.sessionId ? options.checkpoint : null;
		this.fetchImpl = options.fetchImpl ?? ((input, init) => fetch(input, init));
		this.log = options.log ?? (() => {});
		this.report = options.report ?? (() => {});
		this.onCheckpoint = options.onCheckpoint ?? (() => {});
		this.chunkLimit = options.settings.maxChunkBytes;
	}

	get stopped(): string | null {
		return this.stoppedReason;
	}

	get acknowledged(): PushCheckpoint | null {
		return this.checkpoint;
	}

	/** A request is in flight (or the loop sending them runs). */
	get busy(): boolean {
		return this.running !== null;
	}

	/**
	 * Pi wrote something (or might have): flush soon. Never waits, never throws. A kick does not
	 * cut a pending backoff short: while the server fails, requests go out at the backoff's pace
	 * however often Pi writes.
	 */
	kick(delayMs = this.settings.debounceMs): void {
		if (this.closed || this.flushing || this.stoppedReason !== null) return;
		if (this.running) {
			this.again = true;
			return;
		}
		if (this.timer) return;
		this.schedule(delayMs);
	}

	private schedule(delayMs: number): void {
		this.timer = setTimeout(() => {
			this.timer = null;
			if (this.closed || this.flushing || this.running) return;
			const loop = this.drain()
				.catch(() => null)
				.then((retryInMs) => {
					if (this.running === loop) this.running = null;
					const again = this.again;
					this.again = false;
					if (this.closed || this.flushing || this.stoppedReason !== null) return;
					if (retryInMs !== null) this.schedule(retryInMs);
					else if (again) this.kick(0);
				});
			this.running = loop;
		}, delayMs);
		this.timer.unref?.();
	}

	/** Stops timers and abandons the request in flight (its bytes are resumed by the next start). */
	close(): void {
		this.closed = true;
		if (this.timer) clearTimeout(this.timer);
		this.timer = null;
		this.inFlight?.abort(new Error("contextlab: Pi is exiting"));
	}

	/**
	 * Flushes until the server holds the whole file, a request fails or `deadlineMs` passed; for
	 * Pi's exit and tests. A request already in flight is waited for (within the deadline), never
	 * sent a second time beside it; a pending backoff is cut short (this is the last chance).
	 */
	async flushNow(deadlineMs: number): Promise<PushOutcome> {
		const until = Date.now() + deadlineMs;
		if (this.timer) clearTimeout(this.timer);
		this.timer = null;
		this.flushing = true;
		try {
			while (this.running) {
				const current = this.running;
				if (!(await settlesWithin(current, until - Date.now()))) return { kind: "retry", reason: "a request still in flight", delayMs: 0 };
				if (this.running === current) this.running = null;
			}
			const loop = this.flushLoop(until);
			this.running = loop;
			try {
				return await loop;
			} finally {
				if (this.running === loop) this.running = null;
			}
		} finally {
			this.flushing = false;
		}
	}

	private async flushLoop(until: number): Promise<PushOutcome> {
		let outcome: PushOutcome = { kind: "idle" };
		while (Date.now() < until && !this.closed) {
			try {
				outcome = await this.pushOnce(Math.max(1, until - Date.now()));
			} catch (error) {
				return this.backoff(`reading the session file failed (${describe(error)})`);
			}
			if (outcome.kind !== "sent") break;
		}
		return outcome;
	}

	/** Pushes until there is nothing to send; the backoff delay when a request failed. */
	private async drain(): Promise<number | null> {
		for (;;) {
			if (this.closed || this.flushing) return null;
			let outcome: PushOutcome;
			try {
				outcome = await this.pushOnce(this.settings.requestTimeoutMs);
			} catch (error) {
				outcome = this.backoff(`reading the session file failed (${describe(error)})`);
			}
			if (outcome.kind === "sent") continue;
			if (outcome.kind === "retry") {
				this.log("debug", `contextlab: ${this.sessionId}: ${outcome.reason}; retry in ${outcome.delayMs} ms`);
				return outcome.delayMs;
			}
			if (outcome.kind === "stopped") {
				this.log("debug", `contextlab: not pushing session ${this.sessionId}: ${outcome.reason}`);
			}
			return null;
		}
	}

	/** One request at most. */
	async pushOnce(timeoutMs: number): Promise<PushOutcome> {
		if (this.stoppedReason !== null) return { kind: "stopped", reason: this.stoppedReason };
		let size: number;
		let inode: number;
		try {
			({ size, ino: inode } = await stat(this.file));
		} catch {
			return { kind: "idle" }; // not written yet (Pi creates the file with its first reply)
		}
		let offset = await this.startingOffset(size, inode);
		if (offset === 0) {
			this.blockedAt = null; // a rewritten file starts over
			this.prefixHasher = null;
		}
		if (this.checkpoint !== null && offset === size) return { kind: "idle" };
		let body = new Uint8Array(0);
		if (this.checkpoint !== null) {
			if (offset === this.blockedAt) return { kind: "idle" }; // reported once already
			const chunk = await this.readChunk(offset, size);
			if (chunk === "too-long") return this.block(offset, `a line longer than ${this.settings.maxLineBytes} bytes`);
			// Only complete lines are sent: the server keeps nothing of a torn last line (Pi is
			// still writing it, or was killed mid-line), so sending it would only repeat itself.
			if (chunk.length === 0) return { kind: "idle" };
			body = chunk;
		}
		if (this.closed) return { kind: "idle" };
		const controller = new AbortController();
		this.inFlight = controller;
		const timeout = Math.max(1, Math.min(timeoutMs, this.settings.requestTimeoutMs));
		const signal = AbortSignal.any([controller.signal, AbortSignal.timeout(timeout)]);
		let response: Response;
		let answer: ServerAnswer;
		try {
			response = await this.fetchImpl(this.endpoint(offset), {
				method: "POST",
				headers: {
					authorization: `Bearer ${this.settings.token}`,
					"content-type": "application/octet-stream",
				},
				body,
				signal,
			});
			answer = await readAnswer(response);
		} catch (error) {
			if (controller.signal.aborted) return { kind: "idle" }; // Pi is exiting: abandoned
			const why = unreachableReason(error, timeout);
			this.report("unreachable", why);
			return this.backoff(`server unreachable (${why})`);
		} finally {
			if (this.inFlight === controller) this.inFlight = null;
		}
		const fromZero = offset === 0 && body.length > 0;
		const resentBefore = this.resentFromZero;
		this.resentFromZero = false;
		if (response.status === 200 || response.status === 201) {
			const held = typeof answer.offset === "number" ? answer.offset : offset + body.length;
			if (held > 0 && !(await this.agrees(held, size, answer))) {
				// The server holds other bytes than this file's before `held`: send the file again
				// from 0 (once; a server that keeps disagreeing is retried with backoff).
				return this.restartFromZero(resentBefore || fromZero, held);
			}
			await this.acknowledge(held, { from: offset, bytes: body });
			if (held !== offset || body.length === 0) this.failures = 0;
			if (body.length === 0 && held === offset) return { kind: "idle" };
			// Complete lines that the server kept none of: sending them again at once would get
			// the same answer, so wait (with backoff) for more bytes or a better-tempered server.
			if (held === offset) return this.backoff(`the server kept none of ${body.length} bytes at ${offset}`);
			return { kind: "sent", offset: held };
		}
		if (response.status === 409 && typeof answer.offset === "number") {
			// The server holds another length: resume from its offset when this file's bytes
			// before it are the server's (a line end, the same tail digest), else from 0 (the
			// file was rewritten, or another writer's lines are there).
			const held = answer.offset;
			if (held > 0 && !(await this.agrees(held, size, answer))) {
				return this.restartFromZero(resentBefore || fromZero, held);
			}
			await this.acknowledge(held);
			this.failures = 0;
			return { kind: "sent", offset: held };
		}
		if (response.status === 404 && offset !== 0) {
			// Nothing stored under this id that we may see: start the file from its first byte.
			this.checkpoint = { sessionId: this.sessionId, offset: 0, prefixHash: "" };
			return { kind: "sent", offset: 0 };
		}
		if (response.status === 413) {
			// Larger than the server takes. Several lines: send fewer at a time. One line: this
			// server can never take it.
			if (body.lastIndexOf(0x0a, body.length - 2) >= 0 && this.chunkLimit > 4096) {
				this.chunkLimit = Math.max(4096, Math.floor(Math.min(this.chunkLimit, body.length) / 2));
				return { kind: "sent", offset };
			}
			return this.block(offset, `a line of ${body.length} bytes, more than the server takes (HTTP 413)`);
		}
		if (response.status === 401 || response.status === 403) {
			this.report("token-refused", `HTTP ${response.status}`);
			return this.stop(`the server refused the token (HTTP ${response.status})`);
		}
		if (response.status === 404) {
			this.report("not-member", this.sessionId);
			return this.stop("the server refused it (HTTP 404: not a member of its project)");
		}
		if (response.status >= 400 && response.status < 500) {
			const reason = `the server refused it (HTTP ${response.status}${typeof answer.status === "string" ? `, ${answer.status}` : ""})`;
			this.log("warn", `contextlab: not pushing session ${this.sessionId}: ${reason}`);
			return this.stop(reason);
		}
		if (response.status >= 500) this.report("server-error", `HTTP ${response.status}`);
		return this.backoff(`HTTP ${response.status}`);
	}

	private stop(reason: string): PushOutcome {
		this.stoppedReason = reason;
		return { kind: "stopped", reason };
	}

	/** The next request sends the file from 0; after a from-0 request that still disagreed, later. */
	private restartFromZero(again: boolean, held: number): PushOutcome {
		this.checkpoint = { sessionId: this.sessionId, offset: 0, prefixHash: "" };
		this.prefixHasher = null;
		this.hashedTo = 0;
		this.resentFromZero = true;
		if (again) return this.backoff(`the server's ${held} bytes still differ from this file's`);
		return { kind: "sent", offset: 0 };
	}

	/**
	 * The server's `held` bytes are this file's first `held` bytes, as far as its answer tells:
	 * the file is that long, `held` is a line end in it, and its tail digest (when the server
	 * sends one) is the file's.
	 */
	private async agrees(held: number, size: number, answer: ServerAnswer): Promise<boolean> {
		if (held > size) return false;
		const before = await readRange(this.file, held - 1, held);
		if (before.length !== 1 || before[0] !== 0x0a) return false;
		const { tailBytes, tailSha256 } = answer;
		if (tailSha256 === undefined && tailBytes === undefined) return true; // a server without the digest
		if (typeof tailSha256 !== "string" || typeof tailBytes !== "number") return false;
		if (!Number.isInteger(tailBytes) || tailBytes < 0 || tailBytes > held) return false;
		return (await rangeDigest(this.file, held - tailBytes, held)) === tailSha256.toLowerCase();
	}

	/** Reported once; the pusher stays idle at `offset` until the file is rewritten. */
	private block(offset: number, what: string): PushOutcome {
		this.blockedAt = offset;
		this.log("warn", `contextlab: session ${this.sessionId} stays at byte ${offset} on the server: ${what} cannot be pushed`);
		return { kind: "idle" };
	}

	private endpoint(offset: number): string {
		const base = this.settings.url.replace(/\/+$/, "");
		return `${base}/api/v1/sessions/${encodeURIComponent(this.sessionId)}/lines?offset=${offset}`;
	}

	/**
	 * Where the next request starts. With no checkpoint the first request is a probe at the file's
	 * end (an empty body): the server answers 200 when it already holds the whole file, or 409/404
	 * with what it holds, and offset 0 is only ever sent when the server holds nothing or the file
	 * was rewritten (shorter than acknowledged, or its acknowledged bytes changed: see
	 * WINDOW_BYTES), which starts a new revision on the server.
	 */
	private async startingOffset(size: number, inode: number): Promise<number> {
		if (this.checkpoint === null) return size;
		const { offset, prefixHash, tailHash, fullHash } = this.checkpoint;
		if (offset === 0) return 0;
		if (size < offset) return 0;
		if (prefixHash && (await rangeDigest(this.file, 0, Math.min(offset, WINDOW_BYTES))) !== prefixHash) return 0;
		if (tailHash && (await rangeDigest(this.file, Math.max(0, offset - WINDOW_BYTES), offset)) !== tailHash) return 0;
		// The whole prefix once there is something to send (a file that did not grow since the
		// last Pi run costs no full read at start).
		if (offset < size && this.verifiedInode !== inode) {
			const hasher = createHash("sha256");
			await feed(hasher, this.file, 0, offset);
			if (fullHash && hasher.copy().digest("hex") !== fullHash) return 0;
			this.prefixHasher = hasher;
			this.hashedTo = offset;
			this.verifiedInode = inode;
		}
		return offset;
	}

	/**
	 * The complete lines from `offset` on, at most `chunkLimit` bytes of them; a first line longer
	 * than that alone (up to `maxLineBytes`). Empty when no line is complete yet; "too-long" when
	 * the first line has no newline within `maxLineBytes`.
	 */
	private async readChunk(offset: number, size: number): Promise<Uint8Array | "too-long"> {
		const handle = await open(this.file, "r");
		try {
			const read = async (from: number, length: number): Promise<Uint8Array> => {
				const buffer = new Uint8Array(length);
				const { bytesRead } = await handle.read(buffer, 0, length, from);
				return buffer.subarray(0, bytesRead);
			};
			const first = await read(offset, Math.min(size - offset, this.chunkLimit));
			const lastNewline = first.lastIndexOf(0x0a);
			if (lastNewline >= 0) return first.subarray(0, lastNewline + 1);
			// One line longer than the chunk: find its end, a piece at a time.
			const cap = Math.min(size, offset + this.settings.maxLineBytes);
			for (let from = offset + first.length; from < cap; ) {
				const piece = await read(from, Math.min(cap - from, 1024 * 1024));
				if (piece.length === 0) break;
				const newline = piece.indexOf(0x0a);
				if (newline >= 0) return read(offset, from + newline + 1 - offset);
				from += piece.length;
			}
			return size - offset >= this.settings.maxLineBytes ? "too-long" : new Uint8Array(0);
		} finally {
			await handle.close();
		}
	}

	/** The server holds the first `offset` bytes; `sent`: the body that went from `sent.from`. */
	private async acknowledge(offset: number, sent?: { from: number; bytes: Uint8Array }): Promise<void> {
		if (offset === 0) {
			this.checkpoint = { sessionId: this.sessionId, offset, prefixHash: "" };
			this.prefixHasher = createHash("sha256");
			this.hashedTo = 0;
			this.onCheckpoint(this.checkpoint);
			return;
		}
		if (this.prefixHasher === null || this.hashedTo > offset) {
			this.prefixHasher = createHash("sha256");
			this.hashedTo = 0;
		}
		if (sent && sent.from === this.hashedTo && offset - sent.from <= sent.bytes.length) {
			this.prefixHasher.update(sent.bytes.subarray(0, offset - sent.from));
		} else {
			await feed(this.prefixHasher, this.file, this.hashedTo, offset);
		}
		this.hashedTo = offset;
		this.checkpoint = {
			sessionId: this.sessionId,
			offset,
			prefixHash: await rangeDigest(this.file, 0, Math.min(offset, WINDOW_BYTES)),
			tailHash: await rangeDigest(this.file, Math.max(0, offset - WINDOW_BYTES), offset),
			fullHash: this.prefixHasher.copy().digest("hex"),
		};
		this.onCheckpoint(this.checkpoint);
	}

	private backoff(reason: string): PushOutcome {
		this.failures += 1;
		const exponential = this.settings.minBackoffMs * 2 ** Math.min(this.failures - 1, 16);
		const capped = Math.min(this.settings.maxBackoffMs, exponential);
		const delayMs = Math.round(capped * (0.75 + Math.random() * 0.5));
		return { kind: "retry", reason, delayMs };
	}
}

/** The answer's JSON object ({} when it is not one); a body cut off or timed out throws. */
async function readAnswer(response: Response): Promise<ServerAnswer> {
	const text = await response.text();
	try {
		const parsed: unknown = JSON.parse(text);
		return parsed && typeof parsed === "object" ? (parsed as ServerAnswer) : {};
	} catch {
		return {};
	}
}

/** True when `promise` settles within `ms` (it is never rejected to the caller). */
function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
	if (ms <= 0) return Promise.resolve(false);
	return new Promise((resolve) => {
		const timer = setTimeout(() => resolve(false), ms);
		timer.unref?.();
		promise.then(
			() => {
				clearTimeout(timer);
				resolve(true);
			},
			() => {
				clearTimeout(timer);
				resolve(true);
			},
		);
	});
}

function describe(error: unknown): string {
	return error instanceof Error ? error.message : String(error);
}

/**
 * Why a request got no answer, in a user's words: the network error's code (connection refused,
 * unknown host, TLS) or the timeout.
 */
export function unreachableReason(error: unknown, timeoutMs: number): string {
	if (error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError")) {
		return `no answer within ${timeoutMs} ms`;
	}
	const cause = error instanceof Error ? (error.cause as { code?: unknown; message?: unknown } | undefined) : undefined;
	const code = typeof cause?.code === "string" ? cause.code : "";
	const words: Record<string, string> = {
		ECONNREFUSED: "connection refused",
		ENOTFOUND: "unknown host",
		EAI_AGAIN: "host name lookup failed",
		ECONNRESET: "connection reset",
		ETIMEDOUT: "connection timed out",
		EHOSTUNREACH: "host unreachable",
		ENETUNREACH: "network unreachable",
		UND_ERR_CONNECT_TIMEOUT: "connection timed out",
		UND_ERR_SOCKET: "connection closed",
		EPROTO: "TLS failed",
	};
	if (words[code]) return words[code];
	if (/CERT|TLS|SSL/i.test(code)) return `TLS failed (${code})`;
	const message = typeof cause?.message === "string" ? cause.message : describe(error);
	return code ? `${code}: ${message}` : message;
}

/** The file's bytes [from, to) (fewer when it is shorter). */
async function readRange(file: string, from: number, to: number): Promise<Uint8Array> {
	if (from < 0 || to <= from) return new Uint8Array(0);
	const handle = await open(file, "r");
	try {
		const buffer = new Uint8Array(to - from);
		const { bytesRead } = await handle.read(buffer, 0, to - from, from);
		return buffer.subarray(0, bytesRead);
	} finally {
		await handle.close();
	}
}

/** sha256 of the file's bytes [from, to). */
export async function rangeDigest(file: string, from: number, to: number): Promise<string> {
	const hasher = createHash("sha256");
	await feed(hasher, file, from, to);
	return hasher.digest("hex");
}

/** Adds the file's bytes [from, to) to `hasher`, a MiB at a time (the event loop runs between). */
async function feed(hasher: Hash, file: string, from: number, to: number): Promise<void> {
	if (to <= from) return;
	const handle = await open(file, "r");
	try {
		const buffer = new Uint8Array(Math.min(to - from, 1024 * 1024));
		for (let position = from; position < to; ) {
			const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, to - position), position);
			if (bytesRead === 0) throw new Error(`${file} is shorter than ${to} bytes`);
			hasher.update(buffer.subarray(0, bytesRead));
			position += bytesRead;
		}
	} finally {
		await handle.close();
	}
}
