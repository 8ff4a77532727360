"""``python -m colbench`` is the ``colbench`` command."""

import sys

from colbench.cli.main import main

sys.exit(main())
