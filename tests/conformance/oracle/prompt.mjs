// The real Pi 0.80.2 building system prompts, for tests/conformance/test_prompt_oracle.py.
//
// stdin: JSON list of cases. Each case is one of
//   {kind: "session", cwd, agentDir, home, projectTrusted: true|false|null, tools: [..]|null,
//    loaderOptions?: {noContextFiles, noSkills, additionalSkillPaths, systemPrompt, appendSystemPrompt}}
//     -> resolves trust as main.js does without a UI (when projectTrusted is null), loads
//        resources with DefaultResourceLoader and lets a real AgentSession build its prompt.
//   {kind: "options", home, options: BuildSystemPromptOptions}
//     -> buildSystemPrompt(options) directly.
// stdout: JSON list of results, in order. PI_PACKAGE_DIR and TZ come from the environment.
import { buildSystemPrompt } from "./node_modules/@earendil-works/pi-coding-agent/dist/core/system-prompt.js";
import { DefaultResourceLoader } from "./node_modules/@earendil-works/pi-coding-agent/dist/core/resource-loader.js";
import { SettingsManager } from "./node_modules/@earendil-works/pi-coding-agent/dist/core/settings-manager.js";
import { SessionManager } from "./node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js";
import { createAgentSession } from "./node_modules/@earendil-works/pi-coding-agent/dist/core/sdk.js";
import { resolveProjectTrusted } from "./node_modules/@earendil-works/pi-coding-agent/dist/core/project-trust.js";
import {
    hasTrustRequiringProjectResources,
    ProjectTrustStore,
} from "./node_modules/@earendil-works/pi-coding-agent/dist/core/trust-manager.js";

function localDate() {
    const now = new Date();
    return `${now.getFullYear()}-${String(now.getMonth() + 1).padStart(2, "0")}-${String(now.getDate()).padStart(2, "0")}`;
}

async function runSession(c) {
    process.env.HOME = c.home;
    let projectTrusted = c.projectTrusted;
    let trustRequired = null;
    if (projectTrusted === null) {
        // main.js createRuntime + resolveProjectTrusted with no UI (print mode).
        trustRequired = hasTrustRequiringProjectResources(c.cwd);
        const startup = SettingsManager.create(c.cwd, c.agentDir, { projectTrusted: false });
        projectTrusted = await resolveProjectTrusted({
            cwd: c.cwd,
            trustStore: new ProjectTrustStore(c.agentDir),
            defaultProjectTrust: startup.getDefaultProjectTrust(),
            projectTrustContext: { hasUI: false },
        });
    }
    const settingsManager = SettingsManager.create(c.cwd, c.agentDir, { projectTrusted });
    const resourceLoader = new DefaultResourceLoader({
        cwd: c.cwd,
        agentDir: c.agentDir,
        settingsManager,
        noExtensions: true,
        ...(c.loaderOptions ?? {}),
    });
    await resourceLoader.reload();
    const options = {
        cwd: c.cwd,
        agentDir: c.agentDir,
        resourceLoader,
        settingsManager,
        sessionManager: SessionManager.inMemory(c.cwd),
    };
    if (c.tools !== null) options.tools = c.tools;
    const dateBefore = localDate();
    const { session } = await createAgentSession(options);
    const skills = resourceLoader.getSkills();
    return {
        prompt: session.systemPrompt,
        dateBefore,
        dateAfter: localDate(),
        projectTrusted,
        trustRequired,
        activeTools: session.getActiveToolNames(),
        contextFiles: resourceLoader.getAgentsFiles().agentsFiles,
        systemPrompt: resourceLoader.getSystemPrompt() ?? null,
        appendSystemPrompt: resourceLoader.getAppendSystemPrompt(),
        skills: skills.skills.map((s) => ({
            name: s.name,
            description: s.description,
            filePath: s.filePath,
            baseDir: s.baseDir,
            disableModelInvocation: s.disableModelInvocation,
        })),
        diagnostics: skills.diagnostics.map((d) => {
            const out = { type: d.type, message: d.message, path: d.path };
            if (d.collision) out.collision = d.collision;
            return out;
        }),
    };
}

// readFileSync(0) fails with EAGAIN on a large piped stdin; read the stream instead.
const cases = JSON.parse(Buffer.concat(await Array.fromAsync(process.stdin)).toString("utf-8"));
const results = [];
for (const c of cases) {
    try {
        if (c.kind === "options") {
            process.env.HOME = c.home;
            const dateBefore = localDate();
            results.push({ prompt: buildSystemPrompt(c.options), dateBefore, dateAfter: localDate() });
        } else {
            results.push(await runSession(c));
        }
    } catch (error) {
        results.push({ error: String(error && error.stack ? error.stack : error) });
    }
}
process.stdout.write(JSON.stringify(results));
