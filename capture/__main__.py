"""`python -m capture ...`: the same as the `wick` command (see `capture/cli.py`)."""

import sys

from .cli import main

sys.exit(main())
