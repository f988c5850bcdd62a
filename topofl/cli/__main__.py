"""``python -m topofl.cli`` runs the command line (as ``python -m topofl``)."""

import sys

from topofl.cli import main

sys.exit(main())
