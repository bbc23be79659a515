// contextlab's Pi extension: sends each session's new lines to a contextlab server as Pi writes
// them, and (Pi 0.x) records the exact system prompt of each request. See ../README.md.
//
// It must never block or slow the agent: every handler returns at once (work is scheduled on
// timers that do not keep the process alive), network calls have timeouts and back off, the only
// buffer is the session file itself, and with no URL and token configured it does nothing.

import { stat } from "node:fs/promises";
import { join } from "node:path";

import { buildCapture, CAPTURE_TYPE, lastCaptureDigest, persistsItsPrompt } from "./capture.ts";
import { type ExtensionConfig, loadConfig } from "./config.ts";
import { DEFAULT_PUSH_SETTINGS, type ProblemKind, type PushSettings, SessionPusher } from "./pusher.ts";
import { PushState } from "./state.ts";

// The parts of Pi's extension API this file uses (structural, so one file serves 0.73, 0.80 and 1.x
// without importing Pi's packages at run time).
interface SessionManagerLike {
	getSessionFile(): string | undefined;
	getSessionId(): string;
	getBranch(): unknown[];
}
interface ContextLike {
	sessionManager: SessionManagerLike;
	model?: { api?: string; provider?: string; id?: string };
	getSystemPromptOptions?: () => unknown;
}
interface PiLike {
	on(event: string, handler: (event: any, ctx: ContextLike) => unknown): void;
	appendEntry(customType: string, data?: unknown): void;
}

/**
 * Bytes flushed at shutdown, at most this long; then requests in flight are abandoned. With the
 * state's save (SAVE_STATE_MS at most) Pi exits within 1.5 s of its last output.
 */
const SHUTDOWN_FLUSH_MS = 800;
const SAVE_STATE_MS = 150;
/** Sessions resumed at start-up from earlier runs, at most. */
const MAX_RESUMED = 20;

export function settingsFrom(config: ExtensionConfig, env: NodeJS.ProcessEnv = process.env): PushSettings {
	const number = (name: string, fallback: number): number => {
		const value = Number(env[name]);
		return Number.isFinite(value) && value > 0 ? value : fallback;
	};
	return {
		...DEFAULT_PUSH_SETTINGS,
		url: config.url,
		token: config.token,
		minBackoffMs: number("CONTEXTLAB_PUSH_MIN_BACKOFF_MS", DEFAULT_PUSH_SETTINGS.minBackoffMs),
		maxBackoffMs: number("CONTEXTLAB_PUSH_MAX_BACKOFF_MS", DEFAULT_PUSH_SETTINGS.maxBackoffMs),
		maxChunkBytes: number("CONTEXTLAB_PUSH_MAX_CHUNK_BYTES", DEFAULT_PUSH_SETTINGS.maxChunkBytes),
		maxLineBytes: number("CONTEXTLAB_PUSH_MAX_LINE_BYTES", DEFAULT_PUSH_SETTINGS.maxLineBytes),
		requestTimeoutMs: number("CONTEXTLAB_PUSH_TIMEOUT_MS", DEFAULT_PUSH_SETTINGS.requestTimeoutMs),
	};
}

/**
 * One line on stderr per Pi process for each kind of problem (not one per session or request),
 * kept on globalThis so that an extension loaded again in the same process (a new session, a
 * reload) does not repeat it.
 */
const REPORTED = Symbol.for("contextlab.pi-extension.reported");
function reportOnce(kind: string, message: string): void {
	try {
		const registry = globalThis as unknown as Record<symbol, Set<string> | undefined>;
		const seen = (registry[REPORTED] ??= new Set<string>());
		if (seen.has(kind)) return;
		seen.add(kind);
		console.error(message);
	} catch {
		// stderr closed: nothing to tell anyone
	}
}

function problemMessage(url: string, kind: ProblemKind, detail: string): string {
	switch (kind) {
		case "unreachable":
			return `contextlab: cannot reach ${url} (${detail}); pushes are retried, and what this run could not send is sent by a later Pi run`;
		case "token-refused":
			return `contextlab: ${url} refused the token (${detail}); nothing is pushed: check CONTEXTLAB_TOKEN or contextlab.token`;
		case "not-member":
			return `contextlab: ${url} refused session ${detail} (HTTP 404): your account is not a member of its project, or another account owns the session; it is not pushed`;
		case "server-error":
			return `contextlab: ${url} failed (${detail}); pushes are retried`;
	}
}

export default function contextlab(pi: PiLike): void {
	// Nothing the extension does may reach Pi as an exception: every entry point is guarded.
	try {
		install(pi);
	} catch (error) {
		reportOnce("internal", `contextlab: extension disabled for this run: ${describe(error)}`);
	}
}

function describe(error: unknown): string {
	return error instanceof Error ? error.message : String(error);
}

/** The session a handler's context names, read at once (a context turns stale after Pi moves on). */
function sessionOf(ctx: ContextLike): { file: string; sessionId: string } | null {
	try {
		const file = ctx.sessionManager.getSessionFile();
		if (!file) return null; // in-memory session (--no-session): nothing to push
		return { file, sessionId: ctx.sessionManager.getSessionId() };
	} catch {
		return null;
	}
}

function install(pi: PiLike): void {
	const loaded = loadConfig();
	if (loaded === null) return; // unconfigured: inert
	if ("problem" in loaded) {
		reportOnce("bad-url", `contextlab: ${loaded.problem}; nothing is pushed`);
		return;
	}
	const config = loaded;
	const settings = settingsFrom(config);
	const state = new PushState(join(config.agentDir, "contextlab"));
	const pushers = new Map<string, SessionPusher>();
	const log = (level: "debug" | "warn", message: string) => {
		if (level === "warn" || process.env.CONTEXTLAB_DEBUG) {
			try {
				console.error(message);
			} catch {
				// stderr closed
			}
		}
	};
	const report = (kind: ProblemKind, detail: string) => reportOnce(kind, problemMessage(config.url, kind, detail));
	// Every push waits for the checkpoints (the first one too, in print mode as well): a push
	// before them would probe the server instead of resuming, or resend what it holds.
	const loaded$ = state.load().catch(() => undefined);
	let exiting = false;

	function pusherFor(file: string, sessionId: string): SessionPusher {
		let pusher = pushers.get(file);
		if (!pusher || pusher.sessionId !== sessionId) {
			pusher?.close();
			const stored = state.get(file, config.url);
			if (!stored || stored.sessionId !== sessionId) {
				// Remembered before anything is acknowledged, so that a Pi killed while contextlab
				// is unreachable still has this file resumed by its next start.
				state.set(file, config.url, { sessionId, offset: null, prefixHash: "" });
			}
			pusher = new SessionPusher({
				file,
				sessionId,
				settings,
				checkpoint:
					stored && stored.sessionId === sessionId && stored.offset !== null
						? {
								sessionId,
								offset: stored.offset,
								prefixHash: stored.prefixHash,
								tailHash: stored.tailHash,
								fullHash: stored.fullHash,
							}
						: null,
				log,
				report,
				onCheckpoint: (checkpoint) => state.set(file, config.url, checkpoint),
			});
			pushers.set(file, pusher);
		}
		return pusher;
	}

	/** Sessions Pi wrote to in this run: flushed at exit even if the checkpoints came late. */
	const written = new Map<string, string>();

	/** Pushes `session` soon, once the checkpoints are loaded. Never throws, never waits. */
	function push(session: { file: string; sessionId: string } | null, delayMs?: number, then?: () => void): void {
		if (session) written.set(session.file, session.sessionId);
		void loaded$
			.then(() => {
				if (exiting) return;
				if (session) pusherFor(session.file, session.sessionId).kick(delayMs);
				then?.();
			})
			.catch((error: unknown) => log("debug", `contextlab: ${describe(error)}`));
	}

	/**
	 * Files of earlier runs that grew past what the server acknowledged (offline, quit early, a
	 * refused token), the most recently updated first: the files that need nothing are skipped
	 * (a stat each), so that old pending files are not crowded out by newer delivered ones.
	 */
	async function resumeEarlier(currentFile: string | undefined): Promise<void> {
		const candidates = Object.entries(state.all())
			.filter(([file, checkpoint]) => file !== currentFile && checkpoint.url === config.url)
			.sort(([, a], [, b]) => b.updatedAt.localeCompare(a.updatedAt));
		// All at once: a `pi -p` run lives about a second after its session starts.
		const sizes = await Promise.all(candidates.map(([file]) => stat(file).then((s) => s.size, () => null)));
		const pending = candidates.filter(([, checkpoint], i) => sizes[i] !== null && (checkpoint.offset === null || checkpoint.offset !== sizes[i]));
		if (exiting) return;
		for (const [file, checkpoint] of pending.slice(0, MAX_RESUMED)) {
			pusherFor(file, checkpoint.sessionId).kick(0);
		}
		log("debug", `contextlab: resuming ${Math.min(pending.length, MAX_RESUMED)} of ${candidates.length} earlier session files`);
	}

	const on = (event: string, handler: (event: any, ctx: ContextLike) => unknown) => {
		pi.on(event, (payload, ctx) => {
			try {
				return handler(payload, ctx);
			} catch (error) {
				log("debug", `contextlab: ${event}: ${describe(error)}`);
				return undefined;
			}
		});
	};

	on("session_start", (_event, ctx) => {
		// The context is read now: after the await below, Pi may have replaced it (it is stale then).
		const session = sessionOf(ctx);
		log("debug", `contextlab: session_start ${session?.file ?? "(no file)"}`);
		push(session, 0, () => void resumeEarlier(session?.file).catch((error: unknown) => log("debug", `contextlab: resuming: ${describe(error)}`)));
	});

	// Pi appends its lines synchronously; these are the moments new lines exist.
	for (const event of [
		"message_end",
		"turn_end",
		"agent_end",
		"session_compact",
		"session_tree",
		"model_select",
		"thinking_level_select",
	]) {
		on(event, (_event, ctx) => push(sessionOf(ctx)));
	}

	// The inputs of the prompt: the event of before_agent_start carries them in every version; the
	// context's getSystemPromptOptions() exists only where Pi offers it to event handlers.
	let promptOptions: unknown = null;
	on("before_agent_start", (event) => {
		promptOptions = event?.systemPromptOptions ?? null;
		return undefined;
	});

	on("before_provider_request", (event, ctx) => {
		if (!config.capturePrompts) return undefined;
		try {
			const branch = ctx.sessionManager.getBranch() as Parameters<typeof persistsItsPrompt>[0];
			if (persistsItsPrompt(branch)) return undefined;
			const capture = buildCapture({
				payload: event?.payload,
				model: ctx.model,
				options: ctx.getSystemPromptOptions?.() ?? promptOptions,
			});
			if (capture && capture.digest !== lastCaptureDigest(branch)) {
				pi.appendEntry(CAPTURE_TYPE, capture);
			}
		} catch (error) {
			log("warn", `contextlab: prompt not captured: ${describe(error)}`);
		}
		return undefined; // the payload goes out unchanged
	});

	pi.on("session_shutdown", async () => {
		// One bounded attempt to deliver the last lines, then every request still in flight is
		// abandoned (aborted, so that nothing keeps Pi's process alive): Pi exits within
		// 1.5 s of its last output, and the next start resumes from the server's offset.
		try {
			const deadline = Date.now() + SHUTDOWN_FLUSH_MS;
			await within(loaded$, deadline - Date.now());
			// A run that ends as soon as it starts (print mode, `--no-session`) gets here before the
			// resume its session_start asked for has chosen the earlier files (measured with Pi
			// 0.80.2: the shutdown 110 ms after the start, the checkpoints loaded 30 ms later):
			// chosen now, they go out with this run's last push, within the same deadline.
			await within(resumeEarlier(undefined), deadline - Date.now());
			exiting = true;
			for (const [file, sessionId] of written) {
				if (pushers.get(file)?.sessionId !== sessionId) pusherFor(file, sessionId);
			}
			await within(
				Promise.all([...pushers.values()].map((pusher) => pusher.flushNow(Math.max(1, deadline - Date.now())).catch(() => undefined))),
				deadline - Date.now(),
			);
			for (const pusher of pushers.values()) pusher.close();
			pushers.clear();
			await within(state.save(), SAVE_STATE_MS);
		} catch (error) {
			log("debug", `contextlab: at exit: ${describe(error)}`);
		}
	});
}

/** Waits for `promise` at most `ms` (never rejects). */
function within(promise: Promise<unknown>, ms: number): Promise<void> {
	return new Promise((resolve) => {
		const timer = setTimeout(resolve, Math.max(0, ms));
		timer.unref?.();
		promise.then(
			() => {
				clearTimeout(timer);
				resolve();
			},
			() => {
				clearTimeout(timer);
				resolve();
			},
		);
	});
}
