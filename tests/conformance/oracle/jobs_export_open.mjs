// Opens an exported session file with the real Pi 0.80.2 (a private copy: SessionManager.open
// rewrites files it migrates) and prints what Pi sees: its leaf, its entries and its context.
// stdin: {file}; stdout: {leafId, entryIds, context: buildSessionContext()}.
import { readFileSync } from "node:fs";
import { SessionManager } from "./node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js";

const { file } = JSON.parse(readFileSync(0, "utf8"));
const sm = SessionManager.open(file);
process.stdout.write(
  JSON.stringify({
    sessionId: sm.getSessionId(),
    leafId: sm.getLeafId(),
    entryIds: sm.getEntries().map((e) => e.id),
    context: sm.buildSessionContext(),
  }),
);
