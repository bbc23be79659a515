// Oracle for Pi 0.73.1's projection (tests/conformance/test_pi_0_73.py, through
// test_projection.check_session): ../oracle/project.mjs (same input, modes and output) run against
// @mariozechner/pi-coding-agent 0.73.1 and its pi-ai installed here.
globalThis.PI_ORACLE = {
  agent: new URL("./node_modules/@mariozechner/pi-coding-agent/dist/", import.meta.url).href,
  transform: new URL("./node_modules/@mariozechner/pi-ai/dist/providers/transform-messages.js", import.meta.url).href,
};
await import("../oracle/project.mjs");
