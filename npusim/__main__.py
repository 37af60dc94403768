"""``python -m npusim``: the ``npusim`` command."""

import sys

from npusim.face.cli import main

sys.exit(main())
