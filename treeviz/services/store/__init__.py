"""The run store: runs on disk, run archives (.zip), atomic writes, and values memoised per record."""
