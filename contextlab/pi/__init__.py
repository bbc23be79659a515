"""The Pi context engine: a pure-Python re-implementation of Pi's context engineering.

No Django here (tests/pi/test_purity.py proves it); the Pi facts it relies on are in
docs/pi-engine.md. Modules, one per concern:

- jsutil: JavaScript semantics Pi's output depends on (UTF-16 lengths, JSON.parse/stringify,
  sorting, dates)
- entries: the Json type, typed entry shapes, the message each entry contributes
- session: parse, migrate (v1/v2 -> v3), the entry tree (ordering, leaf, paths, labels, name),
  the command-line loader
- context: buildSessionContext, convertToLlm, and what the provider finally receives
- request: the request at a leaf as a whole (the one builder), every leaf in one walk, and the
  size of each request along a path
- writer: Pi's write side (new ids, key order, appended summaries, the leaf after navigation)
- prompt / resources: system-prompt layers; context files, skills, SYSTEM.md, trust
- tree_selector: Pi's /tree view
- truncate, tokens, compaction, branch_summary, models, providers
- dialects: the strings and rules that differ between Pi versions, one module per version
"""
