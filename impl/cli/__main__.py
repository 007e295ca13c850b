"""`python -m icefloe.impl.cli`: the table commands (the console script adds conform)."""
import sys

from icefloe.impl.cli import main

sys.exit(main())
