"""The command line on top of every layer: `python -m mcts run|replay|eval|analyze-ranking`.

Import rules (checked by tests/unit/test_layers.py): may import every `mcts` layer and `kb`;
nothing imports `mcts.cli` but `mcts.__main__`. Only argparse and cheap modules are
imported at start, so `--help` is instant.
"""

from mcts.cli.main import main

__all__ = ["main"]
