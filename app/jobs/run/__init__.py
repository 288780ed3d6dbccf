"""A run's execution: claim it, load its inputs, fit, describe and store the result."""
