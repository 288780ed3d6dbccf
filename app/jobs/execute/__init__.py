"""Executors: where jobs run (threads in the server, or a Dask cluster) and in what order."""
