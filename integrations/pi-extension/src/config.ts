// Where the extension's settings come from, in order: the environment (CONTEXTLAB_URL,
// CONTEXTLAB_TOKEN, CONTEXTLAB_CAPTURE_PROMPTS), then the "contextlab" object of Pi's global
// settings.json (<agent dir>/settings.json):
//
//   { "contextlab": { "url": "https://contextlab.example.com", "token": "…", "capturePrompts": true } }
//
// Without both a URL and a token the extension does nothing at all: no request, no state file,
// no entry written to any session.

import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";

export interface ExtensionConfig {
	url: string;
	token: string;
	/** Record Pi 0.x's exact system prompt per request as a `custom` entry (1.x persists it itself). */
	capturePrompts: boolean;
	agentDir: string;
}

export function agentDir(env: NodeJS.ProcessEnv = process.env): string {
	const configured = env.PI_CODING_AGENT_DIR;
	if (configured) {
		if (configured === "~") return homedir();
		if (configured.startsWith("~/")) return join(homedir(), configured.slice(2));
		return resolve(configured);
	}
	return join(homedir(), ".pi", "agent");
}

function readSettings(dir: string): Record<string, unknown> {
	try {
		const parsed: unknown = JSON.parse(readFileSync(join(dir, "settings.json"), "utf8"));
		const section = parsed && typeof parsed === "object" ? (parsed as Record<string, unknown>).contextlab : undefined;
		return section && typeof section === "object" ? (section as Record<string, unknown>) : {};
	} catch {
		return {};
	}
}

function flag(value: unknown, fallback: boolean): boolean {
	if (typeof value === "boolean") return value;
	if (typeof value === "string") {
		if (/^(1|true|yes|on)$/i.test(value.trim())) return true;
		if (/^(0|false|no|off)$/i.test(value.trim())) return false;
	}
	return fallback;
}

/** A URL and a token are set, but the URL is not one contextlab can be reached at. */
export interface BadConfig {
	problem: string;
}

/**
 * The configuration; null when the extension is not configured (then it stays inert), a
 * BadConfig when the URL cannot be used (then it stays inert too, and says why once).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): ExtensionConfig | BadConfig | null {
	const dir = agentDir(env);
	const settings = readSettings(dir);
	const url = (env.CONTEXTLAB_URL ?? (typeof settings.url === "string" ? settings.url : "")).trim();
	const token = (env.CONTEXTLAB_TOKEN ?? (typeof settings.token === "string" ? settings.token : "")).trim();
	if (!url || !token) return null;
	const problem = urlProblem(url);
	if (problem) return { problem: `${env.CONTEXTLAB_URL !== undefined ? "CONTEXTLAB_URL" : "contextlab.url"} ${JSON.stringify(url)} ${problem}` };
	return {
		url,
		token,
		capturePrompts: flag(env.CONTEXTLAB_CAPTURE_PROMPTS ?? settings.capturePrompts, true),
		agentDir: dir,
	};
}

/** Why `url` cannot be contextlab's address, or "" when it can. */
export function urlProblem(url: string): string {
	let parsed: URL;
	try {
		parsed = new URL(url);
	} catch {
		return "is not a URL (it needs http:// or https:// and a host, e.g. https://contextlab.example.com)";
	}
	if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
		return "does not start with http:// or https:// (e.g. https://contextlab.example.com)";
	}
	if (!parsed.hostname) return "names no host";
	if (parsed.search || parsed.hash) return "has a query or fragment; give the server's base URL only";
	return "";
}
