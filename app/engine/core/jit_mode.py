"""Whether numba compiles (`NUMBA_DISABLE_JIT=1` turns it off, as the no-JIT test stage does).

A kernel whose loops would crawl as plain Python picks a numpy twin with the same arithmetic
when the JIT is off, so that its callers' tests stay fast while the kernels' own tests still
run the loops (on small inputs)."""

import numba

JIT_OFF = bool(getattr(numba.config, "DISABLE_JIT", False))
