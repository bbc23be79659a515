// Pi 1.6.0's /tree selector on a session file: the rows it lists for each filter mode, search
// and fold set, as plain text (ANSI colours removed). Input on stdin:
//   {"file": "<session.jsonl copy>", "cases": [{"mode", "query", "folded": [ids]}]}
// (1.6.0 hides usage entries always and context edits outside "all"; see
// tests/inspector/test_tree_oracle.py.)
// Output: [{"ids": [...], "lines": [...]}] (the cursor column and the status line left out).
import { SessionManager } from "./node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js";
import { TreeSelectorComponent } from "./node_modules/@earendil-works/pi-coding-agent/dist/modes/interactive/components/tree-selector.js";
import { initTheme } from "./node_modules/@earendil-works/pi-coding-agent/dist/modes/interactive/theme/theme.js";

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
