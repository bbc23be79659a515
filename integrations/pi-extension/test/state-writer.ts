// One Pi process's use of the push state, for the unit tests' concurrent-writers case:
//   node test/state-writer.ts STATE_DIR NAME COUNT
// loads the state, then sets COUNT checkpoints of its own session files (NAME-0 … NAME-<COUNT-1>)
// one after another, saving now and then, as a pusher does while Pi works.

import { PushState } from "../src/state.ts";

const [dir, name, count] = process.argv.slice(2);
const state = new PushState(dir, 1);
await state.load();
for (let i = 0; i < Number(count); i++) {
	state.set(`/sessions/${name}-${i}.jsonl`, "http://contextlab", { sessionId: `${name}-${i}`, offset: i + 1, prefixHash: "h" });
	await new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
	if (i % 5 === 0) await state.save();
}
await state.save();
