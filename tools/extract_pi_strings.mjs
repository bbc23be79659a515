// Extracts Pi 0.80.2's fixed prompt strings and built-in tool definitions as JSON.
// Run from tests/conformance/oracle (where the real Pi is installed):
//   node ../../../tools/extract_pi_strings.mjs > strings.json
// tools/gen_dialect.py turns the JSON into contextlab/pi/dialects/pi_0_80.py.
import { existsSync, readFileSync } from "node:fs";
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

// Pi writes many short texts inline (a string literal, or the fixed parts of a template
// literal) rather than as named constants. Returns the cooked fixed parts of the one literal
// in `file` whose source contains `anchor` (as written in the source, escapes included); a
// plain string literal gives one part, a template with n interpolations n + 1 parts.
// Where the anchor occurs more than once, every occurrence must give the same parts.
function literalParts(file, anchor, pkgDist = dist) {
  const src = readFileSync(path.join(pkgDist, file), "utf8");
  let found = null;
  for (let at = src.indexOf(anchor); at >= 0; at = src.indexOf(anchor, at + 1)) {
    const parts = literalPartsAt(src, at, file, anchor);
    if (found && JSON.stringify(found) !== JSON.stringify(parts)) {
      throw new Error(`${JSON.stringify(anchor)} occurs in different literals in ${file}`);
    }
    found = parts;
  }
  if (!found) throw new Error(`${JSON.stringify(anchor)} not found in ${file}`);
  return found;
}

function literalPartsAt(src, at, file, anchor) {
  const escaped = (i) => {
    let n = 0;
    while (src[i - 1 - n] === "\\") n++;
    return n % 2 === 1;
  };
  let start = at;
  while (start >= 0 && !((src[start] === '"' || src[start] === "`") && !escaped(start))) start--;
  if (start < 0) throw new Error(`no literal opens before ${JSON.stringify(anchor)} in ${file}`);
  const quote = src[start];
  const raw = [];
  let piece = "";
  let i = start + 1;
  for (;;) {
    if (i >= src.length) throw new Error(`unterminated literal at ${JSON.stringify(anchor)} in ${file}`);
    const c = src[i];
    if (c === "\\") {
      piece += c + src[i + 1];
      i += 2;
    } else if (c === quote) {
      break;
    } else if (quote === "`" && c === "$" && src[i + 1] === "{") {
      raw.push(piece);
      piece = "";
      let depth = 1;
      i += 2;
      while (depth > 0) {
        if (src[i] === "{") depth++;
        else if (src[i] === "}") depth--;
        i++;
      }
    } else {
      piece += c;
      i++;
    }
  }
  raw.push(piece);
  // A double quote inside a template literal would open a wrong "literal": it runs on past a
  // backtick or a line end, which a real string literal cannot.
  if (quote === '"' && /[`\n]/.test(piece)) throw new Error(`${JSON.stringify(anchor)}: no string literal found in ${file}`);
  if (i + 1 < at + anchor.length) throw new Error(`${JSON.stringify(anchor)} spans two literals in ${file}`);
  return raw.map((r) => (0, eval)(quote + r + quote));
}

// A template literal as a Python str.format template: the n-th interpolation becomes {n}
// (braces of the text doubled). `dropFirst` leaves out a leading interpolation (the text a
// notice is appended to), renumbering the rest from {0}.
function formatTemplate(file, anchor, { dropFirst = false, pkgDist = dist } = {}) {
  let parts = literalParts(file, anchor, pkgDist);
  if (dropFirst) {
    if (parts.length < 2 || parts[0] !== "") throw new Error(`${JSON.stringify(anchor)} does not start with an interpolation in ${file}`);
    parts = parts.slice(1);
  }
  const esc = (t) => t.replaceAll("{", "{{").replaceAll("}", "}}");
  return parts.map((p, i) => (i === 0 ? esc(p) : `{${i - 1}}${esc(p)}`)).join("");
}

// The string literal `name.join(...)` is called with (every such call in `file` must agree).
function joinSeparator(file, name) {
  const src = readFileSync(path.join(dist, file), "utf8");
  const found = new Set();
  for (const m of src.matchAll(new RegExp(`\\b${name}\\.join\\(("(?:[^"\\\\]|\\\\.)*")\\)`, "g"))) found.add((0, eval)(m[1]));
  if (found.size !== 1) throw new Error(`${name}.join in ${file}: ${JSON.stringify([...found])}`);
  return [...found][0];
}

// The one fixed part of a literal: `index` picks it out of a template's parts.
function literalPart(file, anchor, index = 0, pkgDist = dist) {
  const parts = literalParts(file, anchor, pkgDist);
  if (index >= parts.length) throw new Error(`${JSON.stringify(anchor)} has ${parts.length} parts in ${file}`);
  return parts[index];
}

// pi-ai keeps transformMessages in dist/api/ (0.80) or dist/providers/ (0.73).
const aiRoot = path.join(root, "../pi-ai/dist");
const aiDist = existsSync(path.join(aiRoot, "api/transform-messages.js")) ? aiRoot : path.join(aiRoot, "providers");
const aiTransform = existsSync(path.join(aiRoot, "api/transform-messages.js")) ? "api/transform-messages.js" : "transform-messages.js";
const ifFile = (file, read) => (existsSync(path.join(dist, file)) ? read() : null);

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
  // bashExecutionToText (messages.js)
  BASH_RAN_OPEN: literalPart("messages.js", "Ran \\`", 0),
  BASH_RAN_CLOSE: literalPart("messages.js", "Ran \\`", 1),
  BASH_OUTPUT_OPEN: literalPart("messages.js", "\\`\\`\\`\\n${msg.output}", 0),
  BASH_OUTPUT_CLOSE: literalPart("messages.js", "\\`\\`\\`\\n${msg.output}", 1),
  BASH_NO_OUTPUT: literalPart("messages.js", "(no output)"),
  BASH_CANCELLED: literalPart("messages.js", "(command cancelled)"),
  BASH_EXIT_CODE: literalPart("messages.js", "Command exited with code "),
  BASH_OUTPUT_TRUNCATED_OPEN: literalPart("messages.js", "[Output truncated. Full output: ", 0),
  BASH_OUTPUT_TRUNCATED_CLOSE: literalPart("messages.js", "[Output truncated. Full output: ", 1),
  // compact (compaction.js) and generateBranchSummary (branch-summarization.js)
  NO_PRIOR_HISTORY: literalPart("compaction/compaction.js", "No prior history."),
  SPLIT_TURN_JOINER: literalPart("compaction/compaction.js", "**Turn Context (split turn):**", 1),
  ADDITIONAL_FOCUS: literalPart("compaction/compaction.js", "Additional focus: ", 1),
  BRANCH_ADDITIONAL_FOCUS: literalPart("compaction/branch-summarization.js", "Additional focus: ", 1),
  NO_CONTENT_SUMMARY: literalPart("compaction/branch-summarization.js", "No content to summarize"),
  NO_SUMMARY_GENERATED: literalPart("compaction/branch-summarization.js", "No summary generated"),
  // The prompt text around the serialised conversation (same in all three requests)
  CONVERSATION_OPEN: literalPart("compaction/branch-summarization.js", "<conversation>", 0),
  CONVERSATION_CLOSE: literalPart("compaction/branch-summarization.js", "<conversation>", 1),
  PREVIOUS_SUMMARY_OPEN: literalPart("compaction/compaction.js", "<previous-summary>\\n$", 0),
  PREVIOUS_SUMMARY_CLOSE: literalPart("compaction/compaction.js", "<previous-summary>\\n$", 1),
  // formatFileOperations and serializeConversation (compaction/utils.js)
  READ_FILES_OPEN: literalPart("compaction/utils.js", "<read-files>", 0),
  READ_FILES_CLOSE: literalPart("compaction/utils.js", "<read-files>", 1),
  MODIFIED_FILES_OPEN: literalPart("compaction/utils.js", "<modified-files>", 0),
  MODIFIED_FILES_CLOSE: literalPart("compaction/utils.js", "<modified-files>", 1),
  SERIALIZED_USER: literalPart("compaction/utils.js", "[User]: "),
  SERIALIZED_ASSISTANT_THINKING: literalPart("compaction/utils.js", "[Assistant thinking]: "),
  SERIALIZED_ASSISTANT: literalPart("compaction/utils.js", "[Assistant]: "),
  SERIALIZED_ASSISTANT_TOOL_CALLS: literalPart("compaction/utils.js", "[Assistant tool calls]: "),
  SERIALIZED_TOOL_RESULT: literalPart("compaction/utils.js", "[Tool result]: "),
  SUMMARY_TRUNCATED_OPEN: literalPart("compaction/utils.js", " more characters truncated]", 1),
  SUMMARY_TRUNCATED_CLOSE: literalPart("compaction/utils.js", " more characters truncated]", 2),
  // Tool results and their truncation notices (dist/core/tools/*.js): str.format templates.
  BASH_EMPTY_OUTPUT: literalPart("tools/bash.js", "(no output)"),
  BASH_NOTICE_LAST_LINE: formatTemplate("tools/bash.js", "[Showing last "),
  BASH_NOTICE_LINES: formatTemplate("tools/bash.js", "of ${truncation.totalLines}. Full output: "),
  BASH_NOTICE_BYTES: formatTemplate("tools/bash.js", "of ${truncation.totalLines} (${formatSize(DEFAULT_MAX_BYTES)} limit). Full output: "),
  BASH_STATUS_SEPARATOR: literalPart("tools/bash.js", "${text}\\n\\n`", 1),
  BASH_STATUS_EXIT_CODE: formatTemplate("tools/bash.js", "Command exited with code "),
  BASH_STATUS_TIMED_OUT: formatTemplate("tools/bash.js", "Command timed out after "),
  BASH_STATUS_ABORTED: literalPart("tools/bash.js", "Command aborted"),
  READ_OFFSET_BEYOND_END: formatTemplate("tools/read.js", "is beyond end of file"),
  READ_NOTICE_FIRST_LINE: formatTemplate("tools/read.js", "[Line ${startLineDisplay} is "),
  READ_NOTICE_LINES: formatTemplate("tools/read.js", "of ${totalFileLines}. Use offset="),
  READ_NOTICE_BYTES: formatTemplate("tools/read.js", "of ${totalFileLines} (${formatSize(DEFAULT_MAX_BYTES)} limit). Use offset="),
  READ_NOTICE_MORE_LINES: formatTemplate("tools/read.js", " more lines in file. Use offset=", { dropFirst: true }),
  GREP_NO_MATCHES: literalPart("tools/grep.js", "No matches found"),
  GREP_MATCH_LIMIT: formatTemplate("tools/grep.js", " matches limit reached. Use limit="),
  GREP_LINES_TRUNCATED: formatTemplate("tools/grep.js", "Some lines truncated to "),
  FIND_NO_FILES: literalPart("tools/find.js", "No files found matching pattern"),
  FIND_RESULT_LIMIT: formatTemplate("tools/find.js", " results limit reached. Use limit="),
  FIND_RESULT_LIMIT_CUSTOM_GLOB: formatTemplate("tools/find.js", " results limit reached`"),
  LS_EMPTY: literalPart("tools/ls.js", "(empty directory)"),
  LS_ENTRY_LIMIT: formatTemplate("tools/ls.js", " entries limit reached. Use limit="),
  BYTE_LIMIT_REACHED: formatTemplate("tools/grep.js", "DEFAULT_MAX_BYTES)} limit reached"),
  NOTICES_OPEN: literalPart("tools/grep.js", "${notices.join(", 0),
  NOTICES_SEPARATOR: joinSeparator("tools/grep.js", "notices"),
  NOTICES_CLOSE: literalPart("tools/grep.js", "${notices.join(", 1),
  TRUNCATED_LINE_SUFFIX: formatTemplate("tools/truncate.js", "... [truncated]", { dropFirst: true }),
  // Skill validation and loading diagnostics (dist/core/skills.js): str.format templates.
  SKILL_NAME_TOO_LONG: formatTemplate("skills.js", "name exceeds "),
  SKILL_NAME_INVALID_CHARACTERS: formatTemplate("skills.js", "name contains invalid characters"),
  SKILL_NAME_HYPHEN_EDGES: formatTemplate("skills.js", "name must not start or end with a hyphen"),
  SKILL_NAME_CONSECUTIVE_HYPHENS: formatTemplate("skills.js", "name must not contain consecutive hyphens"),
  SKILL_DESCRIPTION_REQUIRED: literalPart("skills.js", "description is required"),
  SKILL_DESCRIPTION_TOO_LONG: formatTemplate("skills.js", "description exceeds "),
  SKILL_NAME_COLLISION: formatTemplate("skills.js", "name \"${skill.name}\" collision"),
  SKILL_PATH_MISSING: literalPart("skills.js", "skill path does not exist"),
  SKILL_PATH_NOT_MARKDOWN: literalPart("skills.js", "skill path is not a markdown file"),
  // Project trust (dist/core/trust-manager.js; 0.73 has none: null)
  TRUST_STORE_UNREADABLE: ifFile("trust-manager.js", () => formatTemplate("trust-manager.js", "Failed to read trust store ")),
  TRUST_STORE_NOT_OBJECT: ifFile("trust-manager.js", () => formatTemplate("trust-manager.js", ": expected an object")),
  // transformMessages (pi-ai dist/api/transform-messages.js)
  USER_IMAGE_PLACEHOLDER: literalPart(aiTransform, "(image omitted: model", 0, aiDist),
  TOOL_IMAGE_PLACEHOLDER: literalPart(aiTransform, "(tool image omitted: model", 0, aiDist),
  NO_RESULT_TEXT: literalPart(aiTransform, "No result provided", 0, aiDist),
};
for (const file of ["tools/find.js", "tools/ls.js"]) {
  if (formatTemplate(file, "DEFAULT_MAX_BYTES)} limit reached") !== out.BYTE_LIMIT_REACHED) throw new Error(`${file} words the byte limit differently`);
  if (literalPart(file, "${notices.join(", 0) !== out.NOTICES_OPEN || literalPart(file, "${notices.join(", 1) !== out.NOTICES_CLOSE) throw new Error(`${file} brackets its notices differently`);
  if (joinSeparator(file, "notices") !== out.NOTICES_SEPARATOR) throw new Error(`${file} joins its notices differently`);
}
if (out.BRANCH_ADDITIONAL_FOCUS !== out.ADDITIONAL_FOCUS) throw new Error("the two 'Additional focus' texts differ");
delete out.BRANCH_ADDITIONAL_FOCUS;
// Pi 0.73's markdown project context and its exploration guideline (absent from 0.80).
const systemPromptSrc = readFileSync(path.join(dist, "system-prompt.js"), "utf8");
if (systemPromptSrc.includes("# Project Context")) {
  out.PROJECT_CONTEXT_HEADING = literalPart("system-prompt.js", "# Project Context");
  out.PROJECT_CONTEXT_PREAMBLE = literalPart("system-prompt.js", "Project-specific instructions and guidelines:");
  out.PROJECT_CONTEXT_FILE = formatTemplate("system-prompt.js", "## ${filePath}");
  out.BASH_WITH_EXPLORERS_GUIDELINE = literalPart("system-prompt.js", "Prefer grep/find/ls tools over bash");
}
{
  const compactionSrc = readFileSync(path.join(dist, "compaction/compaction.js"), "utf8");
  const conversation = "`<conversation>\\n${conversationText}\\n</conversation>\\n\\n";
  if (compactionSrc.split(conversation).length !== 3) throw new Error("compaction.js wraps the conversation differently");
}

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
