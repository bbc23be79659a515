// Small pieces of Pi 0.80.2's resource loading, for tests/conformance/test_prompt_oracle.py.
// stdin: {ignore: [{patterns, paths}], frontmatter: ["file text", ...], minimatch: [{pattern, paths}]}
// stdout: {ignore: [[true|false|"throws", ...], ...], frontmatter: [{value} | {error}, ...]}
import { createRequire } from "node:module";
import { parseFrontmatter } from "./node_modules/@earendil-works/pi-coding-agent/dist/utils/frontmatter.js";

const require = createRequire(import.meta.url);
// The same copy of `ignore` that Pi's skills.js and package-manager.js import.
const ignore = require(
    require.resolve("ignore", {
        paths: [new URL("./node_modules/@earendil-works/pi-coding-agent/dist/core/", import.meta.url).pathname],
    }),
);

const { minimatch } = require(
    require.resolve("minimatch", {
        paths: [new URL("./node_modules/@earendil-works/pi-coding-agent/dist/core/", import.meta.url).pathname],
    }),
);

// readFileSync(0) fails with EAGAIN on a large piped stdin; read the stream instead.
const input = JSON.parse(Buffer.concat(await Array.fromAsync(process.stdin)).toString("utf-8"));
const out = { ignore: [], frontmatter: [], minimatch: [] };
for (const c of input.minimatch ?? []) {
    out.minimatch.push(c.paths.map((p) => minimatch(p, c.pattern)));
}
for (const c of input.ignore ?? []) {
    const ig = ignore();
    ig.add(c.patterns);
    out.ignore.push(
        c.paths.map((p) => {
            try {
                return ig.ignores(p);
            } catch {
                return "throws";
            }
        }),
    );
}
for (const text of input.frontmatter ?? []) {
    try {
        const { frontmatter, body } = parseFrontmatter(text);
        out.frontmatter.push({ value: frontmatter, body });
    } catch (error) {
        out.frontmatter.push({ error: String(error.message ?? error) });
    }
}
process.stdout.write(JSON.stringify(out));
