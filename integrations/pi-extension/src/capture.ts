// What a Pi 0.x session file cannot tell: the exact system prompt and tool declarations of each
// request, and the inputs Pi built them from (context files with their content, skills, tools).
// Recorded as a `custom` entry (`customType` "contextlab.prompt"), which Pi never puts into the
// model's context; a new entry is written only when the request's prompt, tools or inputs differ
// from the nearest capture on the current branch, so an unchanged prompt costs nothing per turn.
//
// contextlab shows it as "captured" beside its own reconstruction, with the differences. Pi 1.x
// persists its prompt in the session (`system` message entries), so nothing is captured there.

import { createHash } from "node:crypto";

export const CAPTURE_TYPE = "contextlab.prompt";
export const CAPTURE_VERSION = 1;
const SUMMARY_PROMPT_START = "You are a context summarization assistant.";

export interface CapturedPrompt {
	v: number;
	/** The system prompt as the provider received it (text). */
	systemPrompt: string;
	/** The payload field that carried it, verbatim (e.g. the system/developer message). */
	system: unknown;
	/** The payload's tool declarations, verbatim. */
	tools: unknown;
	api: string | null;
	provider: string | null;
	model: string | null;
	options: Record<string, unknown> | null;
	/** sha256 of the fields above; equal digests mean an equal request prompt. */
	digest: string;
}

type Json = Record<string, unknown>;

function asObject(value: unknown): Json | null {
	return value && typeof value === "object" && !Array.isArray(value) ? (value as Json) : null;
}

function textOf(content: unknown): string | null {
	if (typeof content === "string") return content;
	if (Array.isArray(content)) {
		const parts = content
			.map((part) => asObject(part))
			.filter((part): part is Json => part !== null && typeof part.text === "string")
			.map((part) => part.text as string);
		return parts.length ? parts.join("\n\n") : null;
	}
	return null;
}

/** The system prompt field of a provider payload (chat completions, Anthropic, Responses, Gemini). */
export function systemOfPayload(payload: unknown): { system: unknown; text: string } | null {
	const body = asObject(payload);
	if (!body) return null;
	const messages = Array.isArray(body.messages) ? body.messages : Array.isArray(body.input) ? body.input : null;
	if (messages && messages.length > 0) {
		const first = asObject(messages[0]);
		if (first && (first.role === "system" || first.role === "developer")) {
			const text = textOf(first.content);
			if (text !== null) return { system: first, text };
		}
	}
	if (body.system !== undefined) {
		const text = textOf(body.system);
		if (text !== null) return { system: body.system, text };
	}
	if (typeof body.instructions === "string") return { system: body.instructions, text: body.instructions };
	const gemini = asObject(body.systemInstruction) ?? asObject(asObject(body.config)?.systemInstruction);
	if (gemini) {
		const text = textOf(gemini.parts);
		if (text !== null) return { system: gemini, text };
	}
	return null;
}

/** The options Pi built the prompt from, reduced to what contextlab shows (JSON-safe). */
export function describeOptions(options: unknown): Record<string, unknown> | null {
	const o = asObject(options);
	if (!o) return null;
	const files = Array.isArray(o.contextFiles) ? o.contextFiles : [];
	const skills = Array.isArray(o.skills) ? o.skills : [];
	return {
		customPrompt: typeof o.customPrompt === "string" ? o.customPrompt : null,
		appendSystemPrompt: typeof o.appendSystemPrompt === "string" ? o.appendSystemPrompt : null,
		selectedTools: Array.isArray(o.selectedTools) ? o.selectedTools : null,
		toolSnippets: asObject(o.toolSnippets),
		promptGuidelines: Array.isArray(o.promptGuidelines) ? o.promptGuidelines : null,
		cwd: typeof o.cwd === "string" ? o.cwd : null,
		contextFiles: files
			.map((file) => asObject(file))
			.filter((file): file is Json => file !== null)
			.map((file) => ({ path: file.path ?? null, content: file.content ?? null })),
		skills: skills
			.map((skill) => asObject(skill))
			.filter((skill): skill is Json => skill !== null)
			.map((skill) => ({
				name: skill.name ?? null,
				description: skill.description ?? null,
				filePath: skill.filePath ?? null,
				baseDir: skill.baseDir ?? null,
				disableModelInvocation: skill.disableModelInvocation ?? false,
			})),
	};
}

export function buildCapture(input: {
	payload: unknown;
	model: { api?: string; provider?: string; id?: string } | undefined;
	options: unknown;
}): CapturedPrompt | null {
	const found = systemOfPayload(input.payload);
	if (!found) return null;
	// Compaction and branch summaries go through the same provider hook in 0.80: not a turn.
	if (found.text.startsWith(SUMMARY_PROMPT_START)) return null;
	const tools = asObject(input.payload)?.tools ?? null;
	const fields = {
		v: CAPTURE_VERSION,
		systemPrompt: found.text,
		system: found.system,
		tools,
		api: input.model?.api ?? null,
		provider: input.model?.provider ?? null,
		model: input.model?.id ?? null,
		options: describeOptions(input.options),
	};
	const digest = createHash("sha256").update(JSON.stringify(fields)).digest("hex");
	return { ...fields, digest };
}

interface EntryLike {
	type?: string;
	customType?: string;
	data?: unknown;
	message?: { role?: string };
}

/** The newest capture's digest on a branch (root → leaf order), or null. */
export function lastCaptureDigest(branch: readonly EntryLike[]): string | null {
	for (let i = branch.length - 1; i >= 0; i--) {
		const entry = branch[i];
		if (entry.type === "custom" && entry.customType === CAPTURE_TYPE) {
			const digest = asObject(entry.data)?.digest;
			return typeof digest === "string" ? digest : null;
		}
	}
	return null;
}

/** Pi 1.x writes its prompt into the session as `system` messages: nothing to capture. */
export function persistsItsPrompt(branch: readonly EntryLike[]): boolean {
	return branch.some((entry) => entry.type === "message" && entry.message?.role === "system");
}
