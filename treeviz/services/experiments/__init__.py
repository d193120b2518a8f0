"""Experiments: train one model, λ paths, grids, feature-budget searches, and how long they would take."""
