"""Side by side with the authors' public code (microsoft/DGT, mazumder-lab/SkinnyTrees,
vzantedeschi/LatentTrees): what ``python -m benchmarks.reference_speed --run`` needs.

* :mod:`~benchmarks.external.prepare`: fetches the pinned commits into a scratch folder
  (``$REF_HOME``), applies ``patches/`` and builds each reference's environment;
* :mod:`~benchmarks.external.data`: the rows both sides read;
* :mod:`~benchmarks.external.settings`: the five settings and the command lines of a round;
* :mod:`~benchmarks.external.runs`: a run's id, folder and record, and running its commands;
* :mod:`~benchmarks.external.table`: the rows of one run, from its folder alone;
* ``drivers/``: scripts run by path, one per side of each pair (``ref_*.py`` in the authors'
  environments, with the standard library helpers of ``shared.py``; ``ours_*.py`` with treeviz).

The library never imports this package (an import contract says so), and the app never needs the
authors' code.
"""
