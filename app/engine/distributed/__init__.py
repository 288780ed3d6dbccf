"""Data-parallel fits over the chunks of a dask array (DESIGN.md Sec. 6, "Past one machine")."""
