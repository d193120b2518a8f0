"""Background work: the job manager (threads, progress, cancel) and the worker processes it may use."""
