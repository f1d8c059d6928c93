"""Analyses of finished eval runs, one module each, behind `python -m mcts study ...`.

Every study reads what `python -m mcts eval --out DIR` wrote (results files, saved trees)
or a committed study file, and runs no search and no model: `kinds` (F1 per kind of
question), `folds` (held-out train folds, families counted per fold), `misses` (the step
where a lost answer went wrong), `vs_greedy` (whether a search tree holds the greedy
path's answer), `scorer_cells` and `scorers` (the IG scorer chosen by what it does to the
search) and `acceptance` (the search's goals, measured). The answer-rule and sibling-ranking
studies live in `mcts.evaluation.study`. None of these modules knows argparse; the commands
are `mcts.cli.study_commands`.
"""
