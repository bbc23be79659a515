"""The Pi context engine: a pure-Python re-implementation of Pi's context engineering.

No Django here (tests/pi/test_purity.py proves it). Modules, one per concern:

- jsutil: JavaScript semantics Pi's output depends on (UTF-16 lengths, JSON.stringify, sorting)
- session: parse, migrate (v1/v2 -> v3), the entry tree (ordering, leaf, paths, labels, name)
- context: buildSessionContext, convertToLlm, and what the provider finally receives
- prompt / resources: system-prompt layers; context files, skills, SYSTEM.md, trust
- truncate, tokens, compaction, branch_summary
- dialects: the strings and rules that differ between Pi versions, one module per version
"""
