// Pi 1.0.3's own summarisers (tests/conformance/test_pi_1x_summary_variants.py):
// ../oracle-1.6.0/jobs_summarise.mjs (same input and output) run against the Pi 1.0.3 installed here.
globalThis.PI_ORACLE = {
  agent: new URL("./node_modules/@earendil-works/pi-coding-agent/dist/", import.meta.url).href,
  ai: new URL("./node_modules/@earendil-works/pi-ai/dist/", import.meta.url).href,
};
await import("../oracle-1.6.0/jobs_summarise.mjs");
