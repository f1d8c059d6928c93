"""The agent layer: language models, the IG scorer, prompts, the two policies, the world.

What lives here: model loading (`models`), continuation scoring (`lm_scoring`), the IG
reward and its reference (`scorer`), the rating baseline (`cot_scorer`), the agent's
prompt (`prompts`), the guided policy (`policy_guided`, `guided_options`,
`guided_state`, `query_builder`), the ReAct policy (`policy_react`) and `world`, which
builds a KB, its tools, a policy and a scorer for a run.

Import rules (checked by tests/unit/test_layers.py): modules here may import `kb` and
`mcts.search` (the contract types they implement), never `mcts.evaluation`,
`mcts.cli` or Gradio. torch and transformers are imported inside the functions that
need them, so importing this package stays cheap.
"""
