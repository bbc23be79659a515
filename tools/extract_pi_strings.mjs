// Extracts Pi 0.80.2's fixed prompt strings and built-in tool definitions as JSON.
// Run from tests/conformance/oracle (where the real Pi is installed):
//   node ../../../tools/extract_pi_strings.mjs > strings.json
// tools/gen_release_table.py keeps every release's JSON in contextlab/pi/dialects/releases_data.py.
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

// --lenient (the release table, tools/gen_release_table.py): a text a release does not have is
// null instead of an error.
const LENIENT = process.argv.includes("--lenient");
const positional = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const root = path.resolve(positional[0] ?? "node_modules/@earendil-works/pi-coding-agent");
const dist = path.join(root, "dist/core");

function templateConst(file, name) {
  const src = readFileSync(path.join(dist, file), "utf8");
  const re = new RegExp(`(?:export )?const ${name} = (\`(?:\\\\.|[^\`\\\\])*\`);`, "s");
  const m = src.match(re);
  if (!m && LENIENT) return null;
  if (!m) throw new Error(`${name} not found in ${file}`);
  // Pi 1.x builds some prompts from other template constants of the same file: resolve those.
  const used = [...new Set([...m[1].matchAll(/\$\{(\w+)\}/g)].map((x) => x[1]))];
  if (m[1].replace(/\$\{\w+\}/g, "").includes("${")) throw new Error(`${name} has interpolations`);
  const values = used.map((key) => templateConst(file, key));
  return new Function(...used, `return ${m[1]};`)(...values);
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
  if (!found && LENIENT) return null;
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
  if (parts === null) return null;
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
  if (found.size !== 1 && LENIENT) return null;
  if (found.size !== 1) throw new Error(`${name}.join in ${file}: ${JSON.stringify([...found])}`);
  return [...found][0];
}

// The one fixed part of a literal: `index` picks it out of a template's parts.
function literalPart(file, anchor, index = 0, pkgDist = dist) {
  const parts = literalParts(file, anchor, pkgDist);
  if (parts === null) return null;
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
// A cross-check that fails: an error, or under --lenient a note in the output (the release
// table keeps both texts instead of assuming one).
const mismatches = [];
const check = (ok, message) => {
  if (ok) return;
  if (!LENIENT) throw new Error(message);
  mismatches.push(message);
};
for (const file of ["tools/find.js", "tools/ls.js"]) {
  check(formatTemplate(file, "DEFAULT_MAX_BYTES)} limit reached") === out.BYTE_LIMIT_REACHED, `${file} words the byte limit differently`);
  check(literalPart(file, "${notices.join(", 0) === out.NOTICES_OPEN && literalPart(file, "${notices.join(", 1) === out.NOTICES_CLOSE, `${file} brackets its notices differently`);
  check(joinSeparator(file, "notices") === out.NOTICES_SEPARATOR, `${file} joins its notices differently`);
}
check(out.BRANCH_ADDITIONAL_FOCUS === out.ADDITIONAL_FOCUS, "the two 'Additional focus' texts differ");
if (out.BRANCH_ADDITIONAL_FOCUS === out.ADDITIONAL_FOCUS) delete out.BRANCH_ADDITIONAL_FOCUS;
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
  check(compactionSrc.split(conversation).length === 3, "compaction.js wraps the conversation differently");
}
if (mismatches.length) out.MISMATCHES = mismatches;

// --release (tools/gen_release_table.py): also the prompt's assembly and the limits.
if (process.argv.includes("--release")) {
  out.PROMPT = promptAssembly();
  out.LIMITS = limits();
}

// How buildSystemPrompt (dist/core/system-prompt.js) assembles the prompt of a 0.x release, as
// the engine's PromptRules fields; null for a release that persists sections instead (0.86+).
function promptAssembly() {
  const file = "system-prompt.js";
  const src = readFileSync(path.join(dist, file), "utf8");
  const anchor = "\n\nAvailable tools:\n${toolsList}";
  if (!src.includes(anchor)) return null;
  // The main template: identity, tools, guidelines and docs, with its interpolations named.
  const at = src.indexOf(anchor);
  const start = src.lastIndexOf("`", at);
  const names = [];
  const parts = literalParts(file, anchor);
  for (const m of src.slice(start + 1, src.indexOf("`", at + anchor.length)).matchAll(/\$\{(\w+)\}/g)) names.push(m[1]);
  const slot = { toolsList: "{tools}", guidelines: "{guidelines}", readmePath: "{readme}", docsPath: "{docs}", examplesPath: "{examples}" };
  const full = parts.map((p, i) => (i === 0 ? p : `${slot[names[i - 1]]}${p}`)).join("");
  const m = full.match(/^([^]*?)\n\n([^\n]*)\n\{tools\}\n\n([^]*?)\n\n([^\n]*)\n\{guidelines\}\n\n([^\n]*)\n([^]*)$/);
  if (!m) throw new Error(`${file}: the prompt template has an unknown shape`);
  const guidelines = [...src.matchAll(/addGuideline\(("(?:[^"\\]|\\.)*")\)/g)].map((g) => (0, eval)(g[1]));
  const optional = (a) => (src.includes(a) ? literalPart(file, a) : null);
  const bashGuideline = literalPart(file, "Use bash for file operations");
  const explorers = optional("Prefer grep/find/ls tools over bash");
  const psBoth = optional("Use bash or PowerShell for file operations");
  const psOnly = optional("Use PowerShell for file operations");
  const special = new Set([bashGuideline, explorers, psBoth, psOnly]);
  const cwdLiterals = [...src.matchAll(/`\\nCurrent working directory: \$\{promptCwd\}((?:\\n)?)`/g)].map((x) => (0, eval)(`"${x[1]}"`));
  const skills = readFileSync(path.join(dist, "skills.js"), "utf8");
  const loader = readFileSync(path.join(dist, "resource-loader.js"), "utf8");
  const candidates = loader.match(/const candidates = (\[[^\]]*\]);/);
  const defaultTools = src.match(/selectedTools \|\| (\[[^\]]*\])/);
  const markdown = src.includes("# Project Context");
  return {
    identity: m[1],
    tools_header: m[2],
    tools_footer: m[3],
    guidelines_header: m[4],
    docs_header: m[5],
    docs_lines: m[6].split("\n"),
    no_tools: literalPart(file, "(none)"),
    bash_file_ops_guideline: bashGuideline,
    bash_with_explorers_guideline: explorers,
    powershell_and_bash_guideline: psBoth,
    powershell_guideline: psOnly,
    always_guidelines: guidelines.filter((g) => !special.has(g)),
    project_context_open: markdown ? null : literalPart(file, "\\n\\n<project_context>\\n\\n") + literalPart(file, "Project-specific instructions and guidelines:\\n\\n"),
    project_context_file: markdown ? null : formatTemplate(file, "<project_instructions path=").replace("{0}", "{path}").replace("{1}", "{content}"),
    project_context_close: markdown ? null : literalPart(file, "</project_context>\\n"),
    skills_open: literalPart("skills.js", "<available_skills>"),
    skills_close: literalPart("skills.js", "</available_skills>"),
    skills_intro: [
      literalPart("skills.js", "The following skills provide specialized instructions"),
      literalPart("skills.js", "Use the read tool to load a skill"),
      ...(skills.includes("When a skill file references a relative path") ? [literalPart("skills.js", "When a skill file references a relative path")] : []),
    ],
    date_prefix: src.includes("Current date: ") ? literalPart(file, "\\nCurrent date: ") : null,
    cwd_prefix: "\nCurrent working directory: ",
    // What follows the cwd line: [after a built prompt, after a custom prompt] (0.84 ends a
    // custom prompt with a newline).
    cwd_suffixes: cwdLiterals.length === 2 ? [cwdLiterals[1], cwdLiterals[0]] : cwdLiterals,
    default_tools: defaultTools ? JSON.parse(defaultTools[1]) : null,
    context_file_names: candidates ? JSON.parse(candidates[1]) : null,
    project_trust_gates_resources: existsSync(path.join(dist, "trust-manager.js")),
    skill_max_name_length: Number(skills.match(/const MAX_NAME_LENGTH = (\d+);/)[1]),
    skill_max_description_length: Number(skills.match(/const MAX_DESCRIPTION_LENGTH = (\d+);/)[1]),
  };
}

// Numeric limits the engine follows: name -> value (null where a release has no such constant).
function limits() {
  const num = (file, name) => {
    if (!existsSync(path.join(dist, file))) return null;
    const m = readFileSync(path.join(dist, file), "utf8").match(new RegExp(`const ${name} = ([\\d_]+(?: \\* [\\d_]+)*);`));
    return m ? (0, eval)(m[1].replaceAll("_", "")) : null;
  };
  return {
    DEFAULT_MAX_LINES: num("tools/truncate.js", "DEFAULT_MAX_LINES"),
    DEFAULT_MAX_BYTES: num("tools/truncate.js", "DEFAULT_MAX_BYTES"),
    GREP_MAX_LINE_LENGTH: num("tools/truncate.js", "GREP_MAX_LINE_LENGTH"),
    TOOL_RESULT_MAX_CHARS: num("compaction/utils.js", "TOOL_RESULT_MAX_CHARS"),
    ESTIMATED_IMAGE_CHARS: num("compaction/compaction.js", "ESTIMATED_IMAGE_CHARS"),
    GREP_DEFAULT_LIMIT: num("tools/grep.js", "DEFAULT_LIMIT"),
    FIND_DEFAULT_LIMIT: num("tools/find.js", "DEFAULT_LIMIT"),
    LS_DEFAULT_LIMIT: num("tools/ls.js", "DEFAULT_LIMIT"),
  };
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
