// Oracle for token estimates (tests/conformance/test_tokens_oracle.py).
//
// stdin: {"messages": [...]}                  -> {"estimates": [estimateTokens(m) ...],
//                                                 "context": estimateContextTokens(messages)}
//    or: {"file": COPY_OF_SESSION}            -> per entry as leaf: estimateContextTokens of
//        buildSessionContext(...).messages and getLastAssistantUsage(path entries)
import {
  buildSessionContext,
  loadEntriesFromFile,
  migrateSessionEntries,
} from "./node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js";
import {
  calculateContextTokens,
  estimateContextTokens,
  estimateTokens,
  getLastAssistantUsage,
} from "./node_modules/@earendil-works/pi-coding-agent/dist/core/compaction/compaction.js";

const input = JSON.parse(await new Promise((resolve) => {
  let data = "";
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (chunk) => (data += chunk));
  process.stdin.on("end", () => resolve(data));
}));

const safe = (f) => {
  try {
    return f();
  } catch (error) {
    return { error: String(error) };
  }
};

if (input.messages) {
  process.stdout.write(JSON.stringify({
    estimates: input.messages.map((m) => safe(() => estimateTokens(m))),
    context: safe(() => estimateContextTokens(input.messages)),
  }));
} else {
  const all = loadEntriesFromFile(input.file);
  migrateSessionEntries(all);
  const entries = all.filter((e) => e.type !== "session");
  const byId = new Map(entries.map((e) => [e.id, e]));
  const leaves = entries.map((leaf) => {
    const path = [];
    for (let e = leaf; e; e = e.parentId ? byId.get(e.parentId) : undefined) path.unshift(e);
    const { messages } = buildSessionContext(entries, leaf.id, byId);
    const usage = getLastAssistantUsage(path);
    return {
      estimates: messages.map((m) => safe(() => estimateTokens(m))),
      context: estimateContextTokens(messages),
      lastUsage: usage ?? null,
      lastUsageTokens: usage ? calculateContextTokens(usage) : null,
    };
  });
  process.stdout.write(JSON.stringify({ leaves }));
}
