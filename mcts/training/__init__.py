"""Training the agent: trajectories from gold queries, the fixed question split, the trained
relation retriever (the CPU default) and LoRA fine-tuning of the policy LM with PEFT/TRL.

Modules: `split` (which dev questions train, choose, test), `trajectories` (tool-call
trajectories a good agent would take, run on the real tools), `retriever` (the listwise
relation-ranking adapter shipped for the bundled model), `sft` (TRL SFT + PEFT LoRA on
the ReAct text), `choice_eval` (the guided policy's first relation pick vs gold, to
choose the similarity-prior weight on the choose questions), `plots` (loss curves).

Import rules: this package may import `kb`, `mcts.search`, `mcts.agents` and
`mcts.evaluation`; nothing outside `mcts.cli` imports it. torch, transformers, peft and
trl are imported inside functions so `import mcts.training` stays cheap.
"""
