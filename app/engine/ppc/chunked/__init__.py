"""PPC fitted data-parallel over the chunks of a dask array: the E-step per chunk (related
rows kept in one chunk), the M-step from reduced moments."""
