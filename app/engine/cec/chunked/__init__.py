"""CEC and CEC-IB fitted data-parallel over the chunks of a dask array: passes of
classification EM reduced to per-cluster totals, then Hartigan polishing inside each chunk."""
