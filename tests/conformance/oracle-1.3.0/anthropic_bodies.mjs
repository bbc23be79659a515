// Oracle for Pi 1.x agent turns to an Anthropic model (tests/conformance/test_pi_1x_anthropic.py):
// ../oracle-1.6.0/anthropic_bodies.mjs (same input and output) run against the Pi 1.3.0 installed here.
globalThis.PI_ORACLE = {
  agent: new URL("./node_modules/@earendil-works/pi-coding-agent/dist/", import.meta.url).href,
  ai: new URL("./node_modules/@earendil-works/pi-ai/dist/", import.meta.url).href,
};
await import("../oracle-1.6.0/anthropic_bodies.mjs");
