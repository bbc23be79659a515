// Pi 0.80.2's /tree selector on a session file: the rows it lists for each filter mode, search
// and fold set, as plain text (ANSI colours removed). Input on stdin:
//   {"file": "<session.jsonl copy>", "cases": [{"mode", "query", "folded": [ids]}]}
// Output: [{"ids": [...], "lines": [...]}] (the cursor column and the status line left out).
// Which Pi: 0.80.2 next to this script, unless a wrapper (oracle-1.6.0/tree_view.mjs) set
// globalThis.PI_ORACLE = {agent: <pi-coding-agent dist/ URL>} before importing it.
const PI = globalThis.PI_ORACLE ?? {
  agent: new URL("./node_modules/@earendil-works/pi-coding-agent/dist/", import.meta.url).href,
};
const { SessionManager } = await import(`${PI.agent}core/session-manager.js`);
const { TreeSelectorComponent } = await import(`${PI.agent}modes/interactive/components/tree-selector.js`);
const { initTheme } = await import(`${PI.agent}modes/interactive/theme/theme.js`);

// readFileSync(0) fails with EAGAIN on a large piped stdin; read the stream instead.
const input = JSON.parse(Buffer.concat(await Array.fromAsync(process.stdin)).toString("utf-8"));
initTheme("dark");
process.env.HOME = "/nonexistent-home-for-oracle";
const manager = SessionManager.open(input.file);
const out = [];
for (const c of input.cases) {
  const selector = new TreeSelectorComponent(
    manager.getTree(), manager.getLeafId(), 100000, () => {}, () => {}, () => {}, undefined, c.mode,
  );
  const list = selector.treeList ?? selector.getTreeList?.();
  list.searchQuery = c.query ?? "";
  for (const id of c.folded ?? []) list.foldedNodes.add(id);
  list.applyFilter();
  const rendered = list.filteredNodes.length ? list.render(100000).slice(0, -1) : [];
  const lines = rendered.map((l) => l.replace(/\x1b\[[0-9;]*m/g, "").slice(2));
  out.push({ ids: list.filteredNodes.map((n) => n.node.entry.id), lines });
}
process.stdout.write(JSON.stringify(out));
