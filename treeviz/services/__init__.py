"""The app's services, in rooms (each a layer of the import contract, top to bottom):

- ``views/``: what one page or view computes (a run's tree with its data, Compare's groups and
  Pareto front, bandit, embedding and semi-supervised comparisons, feature tables, predictions,
  exports);
- ``experiments/``: training, λ paths, grids, feature-budget searches and time estimates;
- ``jobs/`` and ``store/`` (siblings, neither imports the other): background jobs and their worker
  processes; the run store, run archives and atomic writes;
- ``data/``: data sets, uploads, preprocessing.

No Streamlit, no plotly; no family is named here. Display labels live in :mod:`treeviz.ui.labels`."""
