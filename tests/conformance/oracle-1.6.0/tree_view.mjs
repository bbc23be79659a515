// Pi 1.6.0's /tree selector on a session file (tests/inspector/test_tree_oracle.py):
// ../oracle/tree_view.mjs (same input and output) run against the Pi 1.6.0 installed here, which
// hides usage entries always and context edits outside "all".
globalThis.PI_ORACLE = {
  agent: new URL("./node_modules/@earendil-works/pi-coding-agent/dist/", import.meta.url).href,
};
await import("../oracle/tree_view.mjs");
