"""The evaluation layer: answer metrics, the batch runner, the report, the IG ranking analysis.

Uses gold answers, so nothing here is part of inference. Import rules (checked by
tests/unit/test_layers.py): may import `kb`, `mcts.search` and `mcts.agents`; never
`mcts.cli` or Gradio.
"""
