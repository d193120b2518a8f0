"""``python -m treeviz``: the command line (:mod:`treeviz.cli`, run by :func:`treeviz.cli.main.main`)."""

import sys

from treeviz.cli.main import main

sys.exit(main())
