"""``python -m treeviz``: the command line (:mod:`treeviz.cli`)."""

import sys

from treeviz.cli import main

sys.exit(main())
