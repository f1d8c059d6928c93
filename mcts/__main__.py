"""`python -m mcts`: see `mcts.cli`."""

import sys

from mcts.cli import main

sys.exit(main())
