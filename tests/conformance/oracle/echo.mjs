// Transport check for run_oracle: stdin JSON back as {value, units}, units being the UTF-16 code
// units of every string, so a test can see exactly what Node received.
const input = JSON.parse(Buffer.concat(await Array.fromAsync(process.stdin)).toString("utf-8"));
const units = (s) => Array.from({ length: s.length }, (_, i) => s.charCodeAt(i));
process.stdout.write(JSON.stringify({ value: input, units: input.strings.map(units) }));
