// Extracts Pi 0.80.2's fixed prompt strings and built-in tool definitions as JSON.
// Run from tests/conformance/oracle (where the real Pi is installed):
//   node ../../../tools/extract_pi_strings.mjs > strings.json
// tools/gen_dialect.py turns the JSON into contextlab/pi/dialects/pi_0_80.py.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

const root = path.resolve(process.argv[2] ?? "node_modules/@earendil-works/pi-coding-agent");
const dist = path.join(root, "dist/core");

function templateConst(file, name) {
  const src = readFileSync(path.join(dist, file), "utf8");
  const re = new RegExp(`(?:export )?const ${name} = (\`(?:\\\\.|[^\`\\\\])*\`);`, "s");
  const m = src.match(re);
  if (!m) throw new Error(`${name} not found in ${file}`);
  if (m[1].includes("${")) throw new Error(`${name} has interpolations`);
  return (0, eval)(m[1]);
}

const out = {
  COMPACTION_SUMMARY_PREFIX: templateConst("messages.js", "COMPACTION_SUMMARY_PREFIX"),
  COMPACTION_SUMMARY_SUFFIX: templateConst("messages.js", "COMPACTION_SUMMARY_SUFFIX"),
  BRANCH_SUMMARY_PREFIX: templateConst("messages.js", "BRANCH_SUMMARY_PREFIX"),
  BRANCH_SUMMARY_SUFFIX: templateConst("messages.js", "BRANCH_SUMMARY_SUFFIX"),
  SUMMARIZATION_SYSTEM_PROMPT: templateConst("compaction/utils.js", "SUMMARIZATION_SYSTEM_PROMPT"),
  SUMMARIZATION_PROMPT: templateConst("compaction/compaction.js", "SUMMARIZATION_PROMPT"),
  UPDATE_SUMMARIZATION_PROMPT: templateConst("compaction/compaction.js", "UPDATE_SUMMARIZATION_PROMPT"),
  TURN_PREFIX_SUMMARIZATION_PROMPT: templateConst("compaction/compaction.js", "TURN_PREFIX_SUMMARIZATION_PROMPT"),
  BRANCH_SUMMARY_PREAMBLE: templateConst("compaction/branch-summarization.js", "BRANCH_SUMMARY_PREAMBLE"),
  BRANCH_SUMMARY_PROMPT: templateConst("compaction/branch-summarization.js", "BRANCH_SUMMARY_PROMPT"),
};

const { createAllToolDefinitions } = await import(path.join(dist, "tools/index.js"));
const defs = createAllToolDefinitions("/CWD");
out.TOOLS = Object.values(defs).map((d) => ({
  name: d.name,
  label: d.label,
  description: d.description,
  promptSnippet: d.promptSnippet ?? null,
  promptGuidelines: d.promptGuidelines ?? [],
  parameters: JSON.parse(JSON.stringify(d.parameters)),
}));
process.stdout.write(JSON.stringify(out, null, 1));
