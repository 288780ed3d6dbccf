"""The engine's kernels compiled ahead of the first run, in the server and in warm child
processes."""
