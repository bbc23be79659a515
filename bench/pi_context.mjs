// Pi 0.80.2 answering what `manage.py context FILE --json` answers, with its own functions: the
// resume leaf (the last line), buildSessionContext -> convertToLlm -> pi-ai transformMessages for
// the leaf's model, and the system prompt a real AgentSession builds for the header's cwd with the
// resources DefaultResourceLoader finds (as tests/conformance/oracle/prompt.mjs does).
// Usage: node bench/pi_context.mjs FILE AGENT_DIR  (HOME and PI_PACKAGE_DIR from the environment)
// Prints one JSON object {leafId, systemPrompt, messages, sent, model, thinkingLevel}.
import { join } from "path";

const ORACLE = new URL("../tests/conformance/oracle/node_modules/@earendil-works/", import.meta.url).href;
const AGENT = `${ORACLE}pi-coding-agent/dist/core/`;
const { buildSessionContext, loadEntriesFromFile, migrateSessionEntries, SessionManager } = await import(
  `${AGENT}session-manager.js`
);
const { convertToLlm } = await import(`${AGENT}messages.js`);
const { ModelRegistry } = await import(`${AGENT}model-registry.js`);
const { AuthStorage } = await import(`${AGENT}auth-storage.js`);
const { DefaultResourceLoader } = await import(`${AGENT}resource-loader.js`);
const { SettingsManager } = await import(`${AGENT}settings-manager.js`);
const { createAgentSession } = await import(`${AGENT}sdk.js`);
const { transformMessages } = await import(`${ORACLE}pi-ai/dist/api/transform-messages.js`);

const [file, agentDir] = process.argv.slice(2);
const all = loadEntriesFromFile(file);
migrateSessionEntries(all);
const header = all.find((e) => e.type === "session");
const entries = all.filter((e) => e.type !== "session");
const byId = new Map(entries.map((e) => [e.id, e]));
const leafId = entries.length ? entries[entries.length - 1].id : null;
const context = buildSessionContext(entries, leafId, byId);
const messages = convertToLlm(context.messages);
const registry = new ModelRegistry(AuthStorage.inMemory(), join(agentDir, "models.json"));
const found = context.model ? registry.find(context.model.provider, context.model.modelId) : undefined;
const model = found ?? { provider: context.model?.provider ?? null, api: null, id: context.model?.modelId ?? null, input: ["text", "image"] };
const sent = transformMessages(messages, model);

const cwd = header.cwd;
const settingsManager = SettingsManager.create(cwd, agentDir, { projectTrusted: false });
const resourceLoader = new DefaultResourceLoader({ cwd, agentDir, settingsManager, noExtensions: true });
await resourceLoader.reload();
const { session } = await createAgentSession({
  cwd,
  agentDir,
  resourceLoader,
  settingsManager,
  sessionManager: SessionManager.inMemory(cwd),
});
const text = JSON.stringify({
  leafId,
  systemPrompt: session.systemPrompt,
  messages,
  sent,
  model: context.model ?? null,
  thinkingLevel: context.thinkingLevel ?? null,
});
await new Promise((resolve) => process.stdout.write(text, resolve));
process.exit(0);
