"""Background runs: the algorithm registry, the runner, and the executors that call it."""
