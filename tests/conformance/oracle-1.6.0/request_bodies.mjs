// Oracle for the Pi 1.x request variants (tests/conformance/test_pi_1x_variants.py): for every
// entry of a session as leaf, the version's own buildSessionProjection + convertToLlm, then, per
// model, the HTTP body its pi-ai streamSimple sends for that context (captured from `fetch`; the
// request never leaves the process), called as the coding agent calls it for a turn: context
// {messages} (system messages in place), reasoning = the thinking level unless "off", no maxTokens.
// Which Pi: 1.6.0 next to this script, unless a wrapper (oracle-1.x.y/request_bodies.mjs) set
// globalThis.PI_ORACLE = {agent: <pi-coding-agent dist/ URL>, ai: <pi-ai dist/ URL>} first.
// stdin: {"file": COPY_OF_SESSION, "models": [pi-ai model objects]}
// stdout: {"version", "leaves": [{"leafId", "messages" (JSON text), "bodies": [one per model]}]}
import { readFileSync } from "node:fs";

const PI = globalThis.PI_ORACLE ?? {
  agent: new URL("./node_modules/@earendil-works/pi-coding-agent/dist/", import.meta.url).href,
  ai: new URL("./node_modules/@earendil-works/pi-ai/dist/", import.meta.url).href,
};
const { buildSessionProjection, loadEntriesFromFile, migrateSessionEntries } = await import(
  `${PI.agent}core/session-manager.js`
);
const { convertToLlm } = await import(`${PI.agent}core/messages.js`);
const { streamSimple } = await import(`${PI.ai}compat.js`);
const version = JSON.parse(readFileSync(new URL("../package.json", PI.agent), "utf8")).version;

const input = JSON.parse(Buffer.concat(await Array.fromAsync(process.stdin)).toString("utf-8"));

async function body(model, context, reasoning) {
  let captured;
  const fetch = async (_url, init) => {
    captured = typeof init.body === "string" ? init.body : Buffer.from(init.body).toString("utf8");
    throw new Error("captured");
  };
  await streamSimple(model, context, { apiKey: "fake-key", reasoning, fetch, maxRetries: 0 }).result();
  if (captured === undefined) throw new Error(`no request body for ${model.id}`);
  return captured;
}

const fileEntries = loadEntriesFromFile(input.file);
migrateSessionEntries(fileEntries);
const entries = fileEntries.filter((e) => e.type !== "session");
const byId = new Map(entries.map((e) => [e.id, e]));
const leaves = [];
for (const leaf of entries) {
  const projection = buildSessionProjection(entries, leaf.id, byId);
  const messages = convertToLlm(projection.messages);
  const level = projection.thinkingLevel;
  const reasoning = level && level !== "off" ? level : undefined;
  const bodies = [];
  for (const model of input.models) bodies.push(await body(model, { messages }, reasoning));
  leaves.push({ leafId: leaf.id, messages: JSON.stringify(messages), bodies });
}
await new Promise((resolve) => process.stdout.write(JSON.stringify({ version, leaves }), resolve));
