// contextlab's Pi extension: sends each session's new lines to a contextlab server as Pi writes
// them, and (Pi 0.x) records the exact system prompt of each request. See ../README.md.
//
// It must never block or slow the agent: every handler returns at once (work is scheduled on
// timers that do not keep the process alive), network calls have timeouts and back off, the only
// buffer is the session file itself, and with no URL and token configured it does nothing.

import { join } from "node:path";

import { buildCapture, CAPTURE_TYPE, lastCaptureDigest, persistsItsPrompt } from "./capture.ts";
import { type ExtensionConfig, loadConfig } from "./config.ts";
import { DEFAULT_PUSH_SETTINGS, type PushSettings, SessionPusher } from "./pusher.ts";
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

/** Bytes flushed at shutdown, at most this long (a quitting Pi waits no longer). */
const SHUTDOWN_FLUSH_MS = 1500;
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

export default function contextlab(pi: PiLike): void {
	const config = loadConfig();
	if (!config) return; // unconfigured: inert

	const settings = settingsFrom(config);
	const state = new PushState(join(config.agentDir, "contextlab"));
	const pushers = new Map<string, SessionPusher>();
	const warn = (level: "debug" | "warn", message: string) => {
		if (level === "warn" || process.env.CONTEXTLAB_DEBUG) console.error(message);
	};

	function pusherFor(file: string, sessionId: string): SessionPusher {
		let pusher = pushers.get(file);
		if (!pusher || pusher.sessionId !== sessionId) {
			pusher?.close();
			const stored = state.get(file, config!.url);
			if (!stored || stored.sessionId !== sessionId) {
				// Remembered before anything is acknowledged, so that a Pi killed while contextlab
				// is unreachable still has this file resumed by its next start.
				state.set(file, config!.url, { sessionId, offset: null, prefixHash: "" });
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
				log: warn,
				onCheckpoint: (checkpoint) => state.set(file, config!.url, checkpoint),
			});
			pushers.set(file, pusher);
		}
		return pusher;
	}

	function current(ctx: ContextLike): SessionPusher | null {
		const file = ctx.sessionManager.getSessionFile();
		if (!file) return null; // in-memory session (--no-session): nothing to push
		return pusherFor(file, ctx.sessionManager.getSessionId());
	}

	const kick = (_event: unknown, ctx: ContextLike) => {
		current(ctx)?.kick();
	};

	pi.on("session_start", (_event, ctx) => {
		// Loading the state is the only I/O here, and it is not awaited.
		void state.load().then(() => {
			current(ctx)?.kick(0);
			resumeEarlier(ctx.sessionManager.getSessionFile());
		});
	});

	/** Files of earlier runs that grew past what the server acknowledged (offline, quit early). */
	function resumeEarlier(currentFile: string | undefined): void {
		const pending = Object.entries(state.all())
			.filter(([file, checkpoint]) => file !== currentFile && checkpoint.url === config!.url)
			.sort(([, a], [, b]) => b.updatedAt.localeCompare(a.updatedAt))
			.slice(0, MAX_RESUMED);
		for (const [file, checkpoint] of pending) {
			pusherFor(file, checkpoint.sessionId).kick(0);
		}
	}

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
		pi.on(event, kick);
	}

	// The inputs of the prompt: the event of before_agent_start carries them in every version; the
	// context's getSystemPromptOptions() exists only where Pi offers it to event handlers.
	let promptOptions: unknown = null;
	pi.on("before_agent_start", (event) => {
		promptOptions = event?.systemPromptOptions ?? null;
		return undefined;
	});

	pi.on("before_provider_request", (event, ctx) => {
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
			warn("warn", `contextlab: prompt not captured: ${error instanceof Error ? error.message : String(error)}`);
		}
		return undefined; // the payload goes out unchanged
	});

	pi.on("session_shutdown", async () => {
		// One short, bounded attempt to deliver the last lines; whatever is left is resumed by the
		// next Pi start from the server's offset.
		const deadline = Date.now() + SHUTDOWN_FLUSH_MS;
		await Promise.all(
			[...pushers.values()].map((pusher) =>
				pusher.flushNow(Math.max(1, deadline - Date.now())).catch(() => undefined),
			),
		);
		for (const pusher of pushers.values()) pusher.close();
		pushers.clear();
		await state.save();
	});
}
