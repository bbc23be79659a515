// Oracle for the projection (tests/conformance/test_projection.py, bench/bench_projection.py).
//
// stdin: {"file": COPY_OF_SESSION, "agentDir"?: DIR, "nowMs": N, "mode": "hash"|"full"|"bench"|"tree",
//         "leaves"?: [entry index, ...], "runs"?: N}
// The caller passes a COPY: SessionManager.open (mode "tree") rewrites files it migrates.
//
// For each leaf (all non-header entries by default, addressed by index so legacy files whose ids
// Pi draws at random still line up), Pi's own pipeline:
//   loadEntriesFromFile -> migrateSessionEntries -> buildSessionContext(entries, leafId, byId)
//   -> convertToLlm -> pi-ai transformMessages(llm, model) (no tool-call id normalisation)
// where model = ModelRegistry.find(provider, modelId) (models.json of agentDir + built-ins), or,
// for a model Pi does not know, contextlab's documented assumption (see model_for_transform).
// "hash": sha256 of JSON.stringify of raw/llm/sent per leaf; "full": the JSON texts themselves;
// "bench": time the pipeline only; "tree": getTree/getLeafId/getLabel/getSessionName;
// "load": loadEntriesFromFile's result as JSON text.
import { createHash } from "crypto";
import { join } from "path";

// Which Pi: 0.80.2 next to this script, unless a wrapper (oracle-0.73.1/project.mjs) set
// globalThis.PI_ORACLE = {agent: <pi-coding-agent dist/ URL>, transform: <transform-messages.js URL>}
// before importing it.
const PI = globalThis.PI_ORACLE ?? {
  agent: new URL("./node_modules/@earendil-works/pi-coding-agent/dist/", import.meta.url).href,
  transform: new URL("./node_modules/@earendil-works/pi-ai/dist/api/transform-messages.js", import.meta.url).href,
};
const { buildSessionContext, loadEntriesFromFile, migrateSessionEntries, SessionManager } = await import(
  `${PI.agent}core/session-manager.js`
);
const { convertToLlm } = await import(`${PI.agent}core/messages.js`);
const { ModelRegistry } = await import(`${PI.agent}core/model-registry.js`);
const { AuthStorage } = await import(`${PI.agent}core/auth-storage.js`);
const { transformMessages } = await import(PI.transform);

const input = JSON.parse(await new Promise((resolve) => {
  let data = "";
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (chunk) => (data += chunk));
  process.stdin.on("end", () => resolve(data));
}));

const nowMs = input.nowMs ?? 0;
Date.now = () => nowMs; // synthetic tool results are stamped with Date.now()

const registry = new ModelRegistry(
  AuthStorage.inMemory(),
  input.agentDir ? join(input.agentDir, "models.json") : undefined,
);

function resolveModel(model, messages) {
  if (!model) return { provider: null, api: null, id: null, input: ["text", "image"] };
  const found = registry.find(model.provider, model.modelId);
  if (found) return found;
  let api = null;
  for (const m of messages) {
    if (m && m.role === "assistant" && m.provider === model.provider && m.model === model.modelId && "api" in m) {
      api = m.api;
    }
  }
  return { provider: model.provider, api, id: model.modelId, input: ["text", "image"] };
}

// Exit only once stdout is flushed: process.exit() would cut a piped write at 64 KiB.
async function finish(text) {
  await new Promise((resolve) => process.stdout.write(text, resolve));
  process.exit(0);
}

const sha = (text) => createHash("sha256").update(text, "utf8").digest("hex");

if (input.mode === "load") {
  // What Pi's loader keeps, before migration: every truthy parsed line, or [] if no header.
  await finish(JSON.stringify({ loaded: JSON.stringify(loadEntriesFromFile(input.file)) }));
}

if (input.mode === "tree") {
  const manager = SessionManager.open(input.file);
  const ids = manager.getEntries().map((e) => e.id);
  const nodes = [];
  const walk = (node, depth) => {
    nodes.push({ id: node.entry.id, depth, children: node.children.map((c) => c.entry.id) });
  };
  const roots = manager.getTree();
  const stack = [...roots].reverse().map((n) => [n, 0]);
  while (stack.length) {
    const [node, depth] = stack.pop();
    walk(node, depth);
    for (let i = node.children.length - 1; i >= 0; i--) stack.push([node.children[i], depth + 1]);
  }
  const labels = {};
  const labelTimestamps = {};
  for (const id of ids) {
    const label = manager.getLabel(id);
    if (label !== undefined) labels[id] = label;
  }
  for (const root of roots) {
    const s = [root];
    while (s.length) {
      const n = s.pop();
      if (n.labelTimestamp !== undefined) labelTimestamps[n.entry.id] = n.labelTimestamp;
      s.push(...n.children);
    }
  }
  await finish(JSON.stringify({
    ids,
    roots: roots.map((r) => r.entry.id),
    nodes,
    leafId: manager.getLeafId(),
    labels,
    labelTimestamps,
    name: manager.getSessionName() ?? null,
    branchOfLeaf: manager.getBranch().map((e) => e.id),
  }));
}

const loadStarted = process.hrtime.bigint();
const all = loadEntriesFromFile(input.file);
migrateSessionEntries(all);
const loadSeconds = Number(process.hrtime.bigint() - loadStarted) / 1e9;
const entries = all.filter((e) => e.type !== "session");
const byId = new Map();
for (const e of entries) byId.set(e.id, e);
const leafIndexes = input.leaves ?? entries.map((_, i) => i);

function project(leafId) {
  const context = buildSessionContext(entries, leafId, byId);
  const llm = convertToLlm(context.messages);
  const model = resolveModel(context.model, context.messages);
  const sent = transformMessages(llm, model);
  return { context, llm, sent, model };
}

if (input.mode === "bench") {
  const runs = input.runs ?? 1;
  const seconds = [];
  let count = 0;
  for (let r = 0; r < runs; r++) {
    count = 0;
    const started = process.hrtime.bigint();
    for (const index of leafIndexes) {
      const { llm, sent } = project(entries[index].id);
      count += llm.length + sent.length;
    }
    seconds.push(Number(process.hrtime.bigint() - started) / 1e9);
  }
  await finish(
    JSON.stringify({ seconds, loadSeconds, leaves: leafIndexes.length, messages: count }),
  );
}

// Pi loops forever on a parentId cycle (a self-parent included): such leaves are reported, not run.
function cycles(leafId) {
  const seen = new Set();
  let current = byId.get(leafId);
  while (current) {
    if (seen.has(current)) return true;
    seen.add(current);
    current = current.parentId ? byId.get(current.parentId) : undefined;
  }
  return false;
}

const results = [];
for (const index of leafIndexes) {
  const leafId = entries[index].id;
  if (cycles(leafId)) {
    results.push({ index, leafId, cycle: true });
    continue;
  }
  const { context, llm, sent, model } = project(leafId);
  const texts = {
    raw: JSON.stringify(context.messages),
    llm: JSON.stringify(llm),
    sent: JSON.stringify(sent),
  };
  results.push({
    index,
    leafId,
    thinkingLevel: context.thinkingLevel ?? null,
    model: context.model,
    transformModel: { provider: model.provider, api: model.api, id: model.id, input: model.input },
    ...(input.mode === "full"
      ? texts
      : { raw: sha(texts.raw), llm: sha(texts.llm), sent: sha(texts.sent) }),
  });
}
process.stdout.write(JSON.stringify({
  header: JSON.stringify(all.find((e) => e.type === "session") ?? null),
  ids: entries.map((e) => e.id),
  migrated: input.withEntries ? JSON.stringify(entries) : undefined,
  results,
}));
