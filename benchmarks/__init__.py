"""Speed and accuracy measurements; run with `python -m benchmarks.run NAME [--quick]`."""
