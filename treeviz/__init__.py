"""treeviz: learn optimisation-based decision trees and look inside them.

The app's layers, one folder each, each importing only the layers below it (``models`` and its
ground sit under them all): ``readers`` (what reads a Tree: rules, code, layout, metrics),
``services`` (data, runs, jobs, training, sweeps, exports), ``plots``, ``ui`` (Streamlit helpers
and the report) and ``cli`` (the command line, beside the pages in ``app_pages``).
"""

from models.ground import __version__

__all__ = ["__version__"]
