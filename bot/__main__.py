"""`python -m bot` → the command line."""

import sys

from bot.cli import main

sys.exit(main())
