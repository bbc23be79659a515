// Extracts Pi 1.x's fixed strings (context wrappers, summarisation prompts, the texts of length
// handling) as JSON. Run from tests/conformance/oracle-1.6.0 (where the real Pi 1.6.0 is installed):
//   node ../../../tools/extract_pi_1x_strings.mjs > strings.json
// tools/gen_release_table.py keeps it (0.87.0 on) in contextlab/pi/dialects/releases_data.py.
import { readFileSync } from "node:fs";
import path from "node:path";

const scope = "node_modules/@earendil-works";
const agent = path.resolve(`${scope}/pi-coding-agent/dist/core`);
const core = path.resolve(`${scope}/pi-agent-core/dist`);

// A module-level template constant; `scope` names the constants it interpolates.
function templateConst(file, name, scope = {}) {
  const src = readFileSync(file, "utf8");
  const re = new RegExp(`(?:export )?const ${name} = (\`(?:\\\\.|[^\`\\\\])*\`);`, "s");
  const m = src.match(re);
  if (!m) throw new Error(`${name} not found in ${file}`);
  const used = [...m[1].matchAll(/\$\{(\w+)\}/g)].map((x) => x[1]);
  for (const key of used) if (!(key in scope)) throw new Error(`${name} interpolates ${key}`);
  return new Function(...Object.keys(scope), `return ${m[1]};`)(...Object.values(scope));
}

// The fixed parts of the one template literal in `file` that contains `anchor`.
function templateParts(file, anchor) {
  const src = readFileSync(file, "utf8");
  const at = src.indexOf(anchor);
  if (at < 0 || src.indexOf(anchor, at + 1) >= 0) throw new Error(`${anchor} not unique in ${file}`);
  const start = src.lastIndexOf("`", at);
  const end = src.indexOf("`", at);
  const raw = src.slice(start + 1, end);
  return raw.split(/\$\{[^}]*\}/).map((piece) => (0, eval)(`\`${piece}\``));
}

const messages = await import(`${agent}/messages.js`);
const utils = await import(`${agent}/compaction/utils.js`);
const compaction = path.join(agent, "compaction/compaction.js");
const branch = path.join(agent, "compaction/branch-summarization.js");
const notExecuted = templateParts(path.join(core, "agent-loop.js"), "was not executed: the response hit");
const tokenCap = templateParts(compaction, "failed: generation hit the token cap");

const out = {
  COMPACTION_SUMMARY_PREFIX: messages.COMPACTION_SUMMARY_PREFIX,
  COMPACTION_SUMMARY_SUFFIX: messages.COMPACTION_SUMMARY_SUFFIX,
  BRANCH_SUMMARY_PREFIX: messages.BRANCH_SUMMARY_PREFIX,
  BRANCH_SUMMARY_SUFFIX: messages.BRANCH_SUMMARY_SUFFIX,
  SUMMARIZATION_SYSTEM_PROMPT: utils.SUMMARIZATION_SYSTEM_PROMPT,
  SUMMARIZATION_PROMPT: templateConst(compaction, "SUMMARIZATION_PROMPT"),
  UPDATE_SUMMARIZATION_PROMPT: templateConst(compaction, "UPDATE_SUMMARIZATION_PROMPT", {
    UPDATE_SUMMARIZATION_INSTRUCTIONS: templateConst(compaction, "UPDATE_SUMMARIZATION_INSTRUCTIONS"),
  }),
  TURN_PREFIX_SUMMARIZATION_PROMPT: templateConst(compaction, "TURN_PREFIX_SUMMARIZATION_PROMPT"),
  BRANCH_SUMMARY_PREAMBLE: templateConst(branch, "BRANCH_SUMMARY_PREAMBLE"),
  BRANCH_SUMMARY_PROMPT: templateConst(branch, "BRANCH_SUMMARY_PROMPT"),
  // `Tool call "<name>" was not executed: ...`: the two fixed parts around the tool name.
  LENGTH_STOPPED_TOOL_CALL_OPEN: notExecuted[0],
  LENGTH_STOPPED_TOOL_CALL_CLOSE: notExecuted[1],
  // `<label> failed: generation hit the token cap ...`: the part after the label.
  SUMMARY_TOKEN_CAP_SUFFIX: tokenCap[1],
};
process.stdout.write(`${JSON.stringify(out, null, 1)}\n`);
