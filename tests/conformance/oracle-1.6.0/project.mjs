// Oracle for the 1.x projection (tests/conformance/test_pi_1x_oracle.py): for every entry of a
// session as leaf, Pi 1.6.0's own pipeline
//   loadEntriesFromFile -> migrateSessionEntries -> buildSessionProjection(entries, leafId)
//   -> convertToLlm -> getCurrentSystemMessage / getCurrentTools (pi-ai's transcript replay)
// stdin: {"file": COPY_OF_SESSION}   (loadEntriesFromFile may append a newline to the file)
// stdout: {"leaves": [{"leafId", "messages", "thinkingLevel", "model", "systemPrompt", "tools",
//          "editedIds"}]} with messages as JSON text.
import {
  buildSessionProjection,
  loadEntriesFromFile,
  migrateSessionEntries,
} from "./node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js";
import { convertToLlm } from "./node_modules/@earendil-works/pi-coding-agent/dist/core/messages.js";
import { getCurrentSystemPrompt, getCurrentTools } from "@earendil-works/pi-ai";

const input = JSON.parse(await new Promise((resolve) => {
  let data = "";
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (chunk) => (data += chunk));
  process.stdin.on("end", () => resolve(data));
}));

const fileEntries = loadEntriesFromFile(input.file);
migrateSessionEntries(fileEntries);
const entries = fileEntries.filter((e) => e.type !== "session");
const byId = new Map(entries.map((e) => [e.id, e]));
const leaves = entries.map((leaf) => {
  const projection = buildSessionProjection(entries, leaf.id, byId);
  const llm = convertToLlm(projection.messages);
  return {
    leafId: leaf.id,
    messages: JSON.stringify(llm),
    thinkingLevel: projection.thinkingLevel,
    model: projection.model,
    systemPrompt: getCurrentSystemPrompt(llm),
    tools: JSON.stringify(getCurrentTools(llm)),
  };
});
await new Promise((resolve) => process.stdout.write(JSON.stringify({ leaves }), resolve));
