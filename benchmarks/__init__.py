"""Speed and accuracy measurements; run with `python -m benchmarks.report.run NAME [--quick]`."""
