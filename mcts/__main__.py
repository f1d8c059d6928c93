"""`python -m mcts`: see `mcts.cli.main`."""

import sys

from mcts.cli.main import main

sys.exit(main())
