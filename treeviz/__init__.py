"""treeviz: learn optimisation-based decision trees and look inside them."""

__version__ = "0.1.0"
