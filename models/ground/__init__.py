"""The ground both sides stand on: the Tree (the neutral description of a learned tree), the
errors users read, JSON encoding and the thread budget.

It imports nothing else of treeviz: the families (``models``) and the app's layers (``treeviz``)
both build on it, so imports between the two top-level packages run one way, ``treeviz`` →
``models``.
"""

__version__ = "0.1.0"
