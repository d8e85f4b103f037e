"""``python -m dpinfer.cli``: the ``dpinfer`` command."""

import sys

from . import main

sys.exit(main())
