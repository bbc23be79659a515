// Opens an exported session file with the real Pi 1.6.0 (a private copy: SessionManager.open
// rewrites files it migrates) and prints what Pi sees at its leaf: the projection Pi builds
// (buildSessionProjection), its convertToLlm messages, and the prompt and tools pi-ai replays
// from the system messages (what Pi would send next).
// stdin: {file}; stdout: {sessionId, leafId, entryIds, messages (JSON text), thinkingLevel,
//         model, systemPrompt, tools (JSON text)}.
import { readFileSync } from "node:fs";
import { SessionManager } from "./node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js";
import { convertToLlm } from "./node_modules/@earendil-works/pi-coding-agent/dist/core/messages.js";
import { getCurrentSystemPrompt, getCurrentTools } from "@earendil-works/pi-ai";

const { file } = JSON.parse(readFileSync(0, "utf8"));
const sm = SessionManager.open(file);
const projection = sm.buildSessionProjection();
const llm = convertToLlm(projection.messages);
await new Promise((resolve) =>
  process.stdout.write(
    JSON.stringify({
      sessionId: sm.getSessionId(),
      leafId: sm.getLeafId(),
      entryIds: sm.getEntries().map((e) => e.id),
      messages: JSON.stringify(llm),
      thinkingLevel: projection.thinkingLevel,
      model: projection.model,
      systemPrompt: getCurrentSystemPrompt(llm),
      tools: JSON.stringify(getCurrentTools(llm)),
    }),
    resolve,
  ),
);
