"""``python -m colbench.plugins.dynamic_tp``: see :mod:`colbench.plugins.dynamic_tp.cli`."""

import sys

from colbench.plugins.dynamic_tp.cli import main

sys.exit(main())
