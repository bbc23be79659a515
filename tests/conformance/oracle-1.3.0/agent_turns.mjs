// Real Pi 1.3.0 agent turns (tests/conformance/test_pi_1x_anthropic_turns.py):
// ../oracle-1.6.0/agent_turns.mjs (same input and output) run against the Pi 1.3.0 installed here.
globalThis.PI_ORACLE = {
  agent: new URL("./node_modules/@earendil-works/pi-coding-agent/dist/", import.meta.url).href,
};
await import("../oracle-1.6.0/agent_turns.mjs");
