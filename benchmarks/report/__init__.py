"""Reports over the stored results (``benchmarks/results``) and the runner that writes them: the
paper table and ``python -m benchmarks.report.run``. They run nothing of a benchmark's own."""
