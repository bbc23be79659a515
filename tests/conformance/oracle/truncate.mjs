// Oracle: Pi 0.80.2's truncation functions, OutputAccumulator and tools, on a batch of cases.
// stdin: {cases: [...], tools: [...], cwd}; stdout: {cases: [...], tools: [...]}.
// Strings travel as hex of their UTF-16 code units ("u16") so lone surrogates survive the trip.
import { formatSize, truncateHead, truncateLine, truncateTail } from "./node_modules/@earendil-works/pi-coding-agent/dist/core/tools/truncate.js";
import { OutputAccumulator } from "./node_modules/@earendil-works/pi-coding-agent/dist/core/tools/output-accumulator.js";
import { createAllToolDefinitions } from "./node_modules/@earendil-works/pi-coding-agent/dist/core/tools/index.js";

// readFileSync(0) fails with EAGAIN on a large piped stdin; read the stream instead.
const stdin = [];
for await (const chunk of process.stdin) stdin.push(chunk);
const input = JSON.parse(Buffer.concat(stdin).toString("utf-8"));

function fromU16(hex) {
	let out = "";
	for (let i = 0; i < hex.length; i += 4) out += String.fromCharCode(parseInt(hex.slice(i, i + 4), 16));
	return out;
}

function options(c) {
	const o = {};
	if (c.maxLines !== undefined) o.maxLines = c.maxLines;
	if (c.maxBytes !== undefined) o.maxBytes = c.maxBytes;
	return o;
}

const cases = [];
for (const c of input.cases ?? []) {
	switch (c.op) {
		case "head":
			cases.push(truncateHead(fromU16(c.s), options(c)));
			break;
		case "tail":
			cases.push(truncateTail(fromU16(c.s), options(c)));
			break;
		case "line":
			cases.push(c.maxChars === undefined ? truncateLine(fromU16(c.s)) : truncateLine(fromU16(c.s), c.maxChars));
			break;
		case "size":
			cases.push(formatSize(c.n));
			break;
		case "acc": {
			const acc = new OutputAccumulator({ ...options(c), tempFilePrefix: "pi-oracle" });
			for (const chunk of c.chunks) acc.append(Buffer.from(chunk, "base64"));
			acc.finish();
			const snap = acc.snapshot();
			cases.push({ content: snap.content, truncation: snap.truncation, lastLineBytes: acc.getLastLineBytes(), usedTempFile: snap.fullOutputPath !== undefined });
			await acc.closeTempFile();
			break;
		}
		default:
			throw new Error(`unknown op ${c.op}`);
	}
}

const tools = [];
if (input.tools?.length) {
	const defs = createAllToolDefinitions(input.cwd);
	for (const t of input.tools) {
		try {
			const result = await defs[t.tool].execute("call", t.args, undefined, undefined, undefined);
			tools.push({ content: result.content, details: result.details ?? null });
		} catch (err) {
			tools.push({ error: err instanceof Error ? err.message : String(err) });
		}
	}
}

process.stdout.write(JSON.stringify({ cases, tools }));
