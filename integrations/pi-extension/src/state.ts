// The pusher's memory across Pi restarts: per session file, the offset the server acknowledged.
// A session whose file grew past its checkpoint while contextlab was unreachable (or after Pi
// quit before the last push) is resumed by the next Pi start, whatever session that start opens.
//
// One small JSON file, written atomically (temp file + rename) and at most every `delayMs`.

import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname } from "node:path";

import type { PushCheckpoint } from "./pusher.ts";

export interface StoredCheckpoint extends Omit<PushCheckpoint, "offset"> {
	/** Bytes the server acknowledged; null while unknown (the file is probed at the next start). */
	offset: number | null;
	/** Server the checkpoint belongs to: a different URL starts over. */
	url: string;
	updatedAt: string;
}

export type StateMap = Record<string, StoredCheckpoint>;

/** How many files the state remembers (the most recently updated are kept). */
export const MAX_REMEMBERED = 500;

export class PushState {
	readonly path: string;
	private entries: StateMap = {};
	private loaded: Promise<void> | null = null;
	private timer: ReturnType<typeof setTimeout> | null = null;
	private writing: Promise<void> = Promise.resolve();
	private delayMs: number;

	constructor(path: string, delayMs = 50) {
		this.path = path;
		this.delayMs = delayMs;
	}

	load(): Promise<void> {
		this.loaded ??= readFile(this.path, "utf8")
			.then((text) => {
				const parsed: unknown = JSON.parse(text);
				if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) {
					this.entries = parsed as StateMap;
				}
			})
			.catch(() => {
				this.entries = {};
			});
		return this.loaded;
	}

	get(file: string, url: string): StoredCheckpoint | null {
		const found = this.entries[file];
		return found && found.url === url ? found : null;
	}

	all(): StateMap {
		return { ...this.entries };
	}

	set(file: string, url: string, checkpoint: Omit<StoredCheckpoint, "url" | "updatedAt">): void {
		this.entries[file] = { ...checkpoint, url, updatedAt: new Date().toISOString() };
		this.schedule();
	}

	/** Writes pending changes now (shutdown). */
	async save(): Promise<void> {
		if (this.timer) {
			clearTimeout(this.timer);
			this.timer = null;
		}
		this.writing = this.writing.then(() => this.write()).catch(() => {});
		await this.writing;
	}

	private schedule(): void {
		if (this.timer) return;
		this.timer = setTimeout(() => {
			this.timer = null;
			this.writing = this.writing.then(() => this.write()).catch(() => {});
		}, this.delayMs);
		this.timer.unref?.();
	}

	private async write(): Promise<void> {
		const kept = Object.entries(this.entries)
			.sort(([, a], [, b]) => b.updatedAt.localeCompare(a.updatedAt))
			.slice(0, MAX_REMEMBERED);
		this.entries = Object.fromEntries(kept);
		await mkdir(dirname(this.path), { recursive: true });
		const temporary = `${this.path}.${process.pid}.tmp`;
		await writeFile(temporary, `${JSON.stringify(this.entries, null, 1)}\n`, { mode: 0o600 });
		await rename(temporary, this.path);
	}
}
