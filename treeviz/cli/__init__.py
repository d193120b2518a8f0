"""The command line, ``python -m treeviz``: train, sweep, grid, predict, export, report, list and import runs.

It drives the same pieces as the app, so what it does matches the app exactly:

* the model families and their parameters come from the registry (:func:`models.registry.families`):
  ``--family``, ``--preset`` and ``--param NAME=VALUE`` are checked against each family's declared
  schema, and ``--help`` lists them;
* data sets are the built-in catalogue, a CSV/TSV/Parquet file read like an upload on the Data page
  (:func:`treeviz.services.data.read_table`, :func:`treeviz.services.data.table_to_dataset`), or a saved data set;
* training goes through :func:`treeviz.services.experiments.training.train_run`, λ paths through
  :func:`treeviz.services.experiments.sweep.run_sweep` and grids (λ × depth × seed, locally or on a Dask
  cluster) through
  :func:`treeviz.services.experiments.grid.run_grid`, and every run lands in the run store the app reads
  (:class:`treeviz.services.store.runs.RunStore`, ``$TREEVIZ_HOME`` or ``--home``);
* run zips are :mod:`treeviz.services.store.archive`'s, rules are :func:`treeviz.readers.rules.rules` on
  :meth:`treeviz.services.views.run_view.RunView.rules_tree`, code is :mod:`treeviz.readers.codegen`'s (as the Tree
  explorer offers it), reports are :func:`treeviz.ui.report.run_report`'s, and new rows are encoded for a model by
  :func:`treeviz.services.data.encoding.table_to_features` (the upload's encoding) and preprocessed by the run's
  fitted imputer and scaler.

Results go to stdout (tables, or JSON with ``--json``); progress bars, notes and messages go to
stderr. Exit codes (see :data:`treeviz.cli.common.EXIT_CODES`): 0 success, 1 a problem treeviz explains in
one sentence (any :class:`~models.ground.errors.TreevizError`, or an ``OSError`` such as a full disk, printed as
``treeviz: error: <sentence>``), 2 a command line argparse refuses, 70 a crash (any other exception:
a bug, named in one line; ``--debug`` adds the traceback), 130 interrupted by Ctrl-C. The first
Ctrl-C during training asks the model to stop after its current epoch; the run is then stored with
status "cancelled", as the app's Cancel button does. A second Ctrl-C stops at once and stores
nothing.

The package holds one module per command (:mod:`~treeviz.cli.train`, :mod:`~treeviz.cli.sweep`,
:mod:`~treeviz.cli.grid`, :mod:`~treeviz.cli.predict`, :mod:`~treeviz.cli.export`, :mod:`~treeviz.cli.report`,
:mod:`~treeviz.cli.listing` for ``list``, :mod:`~treeviz.cli.delete`, :mod:`~treeviz.cli.imports` for ``import``,
:mod:`~treeviz.cli.families`, :mod:`~treeviz.cli.datasets`), each with its ``HELP``, ``add_arguments(parser)``
and ``cmd_<name>(args)``; :mod:`treeviz.cli.main` assembles the parser from its table of commands and runs
one (``from treeviz.cli.main import main``); :mod:`treeviz.cli.common` and :mod:`treeviz.cli.progress` hold
what several commands share. This file imports nothing: callers import the module that holds what they use.
"""
