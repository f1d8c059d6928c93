"""The search layer: the tree, the method's rules, the drivers of the six methods, traces.

What lives here: the plain data that crosses the search/model boundary (`steps`,
`protocols`), settings, the tree and its statistics, the rules of the method
(`rules`: rewards, decayed backup, principal path, best branch; `cleaning`; the IG
formula as a pure function of NLLs, `ig_formula`, which the scorer and the inspector
share), the
search loop (`loop`) and its per-method drivers (`drivers`), the final answer
(`voting`), cost accounting, and traces (`serialize`, `trace`, `rescore`).

Import rules (checked by tests/unit/test_layers.py): modules here import only the standard
library, `kb`'s public data types (`kb.actions`, `kb.observation`) and each other.
Never `mcts.agents`, `mcts.evaluation`, `mcts.cli`, models, torch or Gradio: the
search gets its policy, scorer and tools through the protocols in `protocols`.
"""
