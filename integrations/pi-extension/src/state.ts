// The pusher's memory across Pi restarts: per session file, the offset the server acknowledged.
// A session whose file grew past its checkpoint while contextlab was unreachable (or after Pi
// quit before the last push) is resumed by the next Pi start, whatever session that start opens.
//
// Several Pi processes (one per terminal) share this memory, so it is one small JSON file per
// session file, in <agent dir>/contextlab/push-state/: a process only ever writes the entries it
// changed, each atomically (temp file + rename), and never overwrites another session's entry. For
// the same session file in two processes, the later update wins (both are offsets the server did
// acknowledge; an older one only costs a 409 at the next push). Writes are batched, at most every
// `delayMs`. Loading merges: an entry set before the load finished is kept when it is newer.
//
// Earlier versions kept every entry in one file, <agent dir>/contextlab/push-state.json; its
// entries are taken over by the first load and the file is removed.

import { createHash } from "node:crypto";
import { mkdir, readdir, readFile, rename, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";

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

interface EntryFile extends StoredCheckpoint {
	file: string;
}

export class PushState {
	/** <agent dir>/contextlab */
	readonly dir: string;
	private entries: StateMap = {};
	private dirty = new Set<string>();
	private loaded: Promise<void> | null = null;
	private timer: ReturnType<typeof setTimeout> | null = null;
	private writing: Promise<void> = Promise.resolve();
	private delayMs: number;
	private sequence = 0;

	constructor(dir: string, delayMs = 50) {
		this.dir = dir;
		this.delayMs = delayMs;
	}

	get entriesDir(): string {
		return join(this.dir, "push-state");
	}

	load(): Promise<void> {
		this.loaded ??= this.read();
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
		this.dirty.add(file);
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

	/** Merges what is on disk into memory; an entry already in memory wins when it is newer. */
	private async read(): Promise<void> {
		let names: string[] = [];
		try {
			names = (await readdir(this.entriesDir)).filter((name) => name.endsWith(".json"));
		} catch {
			// no state yet
		}
		for (const name of names) {
			const entry = await readEntry(join(this.entriesDir, name));
			if (entry) this.merge(entry.file, entry, false);
		}
		await this.takeOverLegacyFile();
	}

	private merge(file: string, stored: StoredCheckpoint, fromLegacy: boolean): void {
		const mine = this.entries[file];
		if (mine && mine.updatedAt >= stored.updatedAt) return;
		const { file: _file, ...checkpoint } = stored as EntryFile;
		this.entries[file] = checkpoint;
		if (fromLegacy) this.dirty.add(file);
		else this.dirty.delete(file);
	}

	private async takeOverLegacyFile(): Promise<void> {
		const legacy = join(this.dir, "push-state.json");
		let parsed: unknown;
		try {
			parsed = JSON.parse(await readFile(legacy, "utf8"));
		} catch {
			return;
		}
		if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) {
			for (const [file, value] of Object.entries(parsed as Record<string, unknown>)) {
				if (isCheckpoint(value)) this.merge(file, value, true);
			}
		}
		await this.write();
		await unlink(legacy).catch(() => {});
	}

	private async write(): Promise<void> {
		if (this.dirty.size === 0) return;
		const files = [...this.dirty];
		this.dirty.clear();
		await mkdir(this.entriesDir, { recursive: true, mode: 0o700 });
		for (const file of files) {
			const entry = this.entries[file];
			if (!entry) continue;
			const path = this.entryPath(file);
			// Another process may have written this session's entry since: keep the later one.
			const onDisk = await readEntry(path);
			if (onDisk && onDisk.file === file && onDisk.updatedAt > entry.updatedAt) {
				this.merge(file, onDisk, false);
				continue;
			}
			const temporary = `${path}.${process.pid}.${++this.sequence}.tmp`;
			const content: EntryFile = { file, ...entry };
			await writeFile(temporary, `${JSON.stringify(content)}\n`, { mode: 0o600 });
			await rename(temporary, path);
		}
		await this.forgetOldest();
	}

	/** Keeps the MAX_REMEMBERED most recently updated entries (in memory and on disk). */
	private async forgetOldest(): Promise<void> {
		const all = Object.entries(this.entries);
		if (all.length <= MAX_REMEMBERED) return;
		all.sort(([, a], [, b]) => b.updatedAt.localeCompare(a.updatedAt));
		for (const [file] of all.slice(MAX_REMEMBERED)) {
			delete this.entries[file];
			await unlink(this.entryPath(file)).catch(() => {});
		}
	}

	private entryPath(file: string): string {
		const name = createHash("sha256").update(file).digest("hex").slice(0, 32);
		return join(this.entriesDir, `${name}.json`);
	}
}

function isCheckpoint(value: unknown): value is StoredCheckpoint {
	if (!value || typeof value !== "object") return false;
	const v = value as Record<string, unknown>;
	return (
		typeof v.url === "string" &&
		typeof v.sessionId === "string" &&
		typeof v.updatedAt === "string" &&
		(v.offset === null || typeof v.offset === "number") &&
		typeof (v.prefixHash ?? "") === "string"
	);
}

async function readEntry(path: string): Promise<EntryFile | null> {
	try {
		const parsed: unknown = JSON.parse(await readFile(path, "utf8"));
		if (isCheckpoint(parsed) && typeof (parsed as { file?: unknown }).file === "string") {
			return { prefixHash: "", ...(parsed as EntryFile) };
		}
	} catch {
		// missing, or not an entry of ours
	}
	return null;
}
