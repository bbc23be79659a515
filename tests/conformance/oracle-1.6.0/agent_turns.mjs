// Runs real Pi 1.x agent turns (its SDK: createAgentSession / AgentSession.prompt, the agent loop,
// its tools) against a model the caller's agent dir declares, so a test can compare what Pi sent
// over HTTP with what contextlab rebuilds from the session file Pi wrote
// (tests/conformance/test_pi_1x_anthropic_turns.py). The agent's stream function is wrapped only
// to note the session leaf when each request leaves (the request itself is untouched).
// Which Pi: 1.6.0 next to this script, unless a wrapper (oracle-1.x.y/agent_turns.mjs) set
// globalThis.PI_ORACLE = {agent: <pi-coding-agent dist/ URL>} first.
// stdin: {cwd, agentDir, sessionDir, prompts: [text, ...]}; environment: HOME (a private one).
// stdout: {version, sessionFile, leafIds: [one per request, in order]}
import { readFileSync } from "node:fs";

const PI = globalThis.PI_ORACLE ?? {
  agent: new URL("./node_modules/@earendil-works/pi-coding-agent/dist/", import.meta.url).href,
};
const { createAgentSession, SessionManager, SettingsManager, DefaultResourceLoader } = await import(
  `${PI.agent}index.js`
);
const agentSession = await import(`${PI.agent}core/agent-session.js`);
const version = JSON.parse(readFileSync(new URL("../package.json", PI.agent), "utf8")).version;

const input = JSON.parse(Buffer.concat(await Array.fromAsync(process.stdin)).toString("utf-8"));
const { cwd, agentDir } = input;

const settingsManager = SettingsManager.create(cwd, agentDir);
const resourceLoader = new DefaultResourceLoader({ cwd, agentDir, settingsManager });
await resourceLoader.reload();
const sessionManager = SessionManager.create(cwd, input.sessionDir);
const { session } = await createAgentSession({ cwd, agentDir, settingsManager, resourceLoader, sessionManager });

const leafIds = [];
const original = session.agent.streamFunction;
const wrapped = (model, context, options) => {
  leafIds.push(session.sessionManager.getLeafId());
  return original(model, context, options);
};
session.agent.streamFunction = wrapped;
// From 1.5 the runtime recognises its own stream function by a mark (AgentSession falls back to
// a plain stream otherwise); earlier releases have no mark.
agentSession.markRuntimeStreamFunction?.(wrapped, session.modelRuntime);

for (const text of input.prompts) await session.prompt(text);
const out = { version, sessionFile: session.sessionManager.getSessionFile(), leafIds };
await new Promise((resolve) => process.stdout.write(JSON.stringify(out), resolve));
process.exit(0);
