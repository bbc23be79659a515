// Oracle for Pi 1.x agent turns to an Anthropic model (tests/conformance/test_pi_1x_anthropic.py):
// for every entry of a session as leaf, the version's own buildSessionProjection + convertToLlm,
// then, per model, the request its pi-ai streamSimple sends for that context as the coding agent
// calls it for a turn (pi-agent-core's agent loop: context {messages} with the system messages in
// place, reasoning = the thinking level unless "off", the session id, no maxTokens): the URL, the
// anthropic-beta and anthropic-version headers and the body, captured from `fetch` (the request
// never leaves the process).
// Which Pi: 1.6.0 next to this script, unless a wrapper (oracle-1.x.y/anthropic_bodies.mjs) set
// globalThis.PI_ORACLE = {agent: <pi-coding-agent dist/ URL>, ai: <pi-ai dist/ URL>} first.
// stdin: {"file": COPY_OF_SESSION, "models": [pi-ai model objects], "sessionId"}
// stdout: {"version", "leaves": [{"leafId", "requests": [{url, beta, version, body}, one per model]}]}
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

function header(headers, name) {
  const all = headers instanceof Headers ? Object.fromEntries(headers.entries()) : headers ?? {};
  for (const [key, value] of Object.entries(all)) if (key.toLowerCase() === name) return value;
  return null;
}

async function request(model, context, reasoning) {
  let captured;
  const fetch = async (url, init) => {
    const body = typeof init.body === "string" ? init.body : Buffer.from(init.body).toString("utf8");
    captured = {
      url: String(url),
      beta: header(init.headers, "anthropic-beta"),
      version: header(init.headers, "anthropic-version"),
      body,
    };
    throw new Error("captured");
  };
  const options = { apiKey: "sk-ant-test", reasoning, sessionId: input.sessionId, fetch, maxRetries: 0 };
  await streamSimple(model, context, options).result();
  if (captured === undefined) throw new Error(`no request for ${model.id}`);
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
  const requests = [];
  for (const model of input.models) requests.push(await request(model, { messages }, reasoning));
  leaves.push({ leafId: leaf.id, requests });
}
await new Promise((resolve) => process.stdout.write(JSON.stringify({ version, leaves }), resolve));
