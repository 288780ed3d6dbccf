"""The warm-up helper compiles kernels for the types a fit uses, or it would compile in vain."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.engine.core import precompile

# In a process whose numba cache holds only the helper's group: fit CEC-IB as the warm-up does
# and list the kernels numba had to compile (a kernel loaded from the cache sends no event).
_FIT_AND_LIST_COMPILES = """
import json
import numpy as np
from numba.core import event
from sklearn.datasets import load_iris
from app.engine.cec import CECIB

compiled = set()
class Listener(event.Listener):
    def on_start(self, ev):
        compiled.add(ev.data["dispatcher"].py_func.__name__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Listener())
X, y = load_iris(return_X_y=True)
CECIB(n_clusters=3, init="labels", random_state=0).fit(X, np.where(np.arange(150) % 10 == 0, y, -1))
CECIB(n_clusters=3, random_state=0).fit(X, np.full(150, -1))  # k-means++ starts
print(json.dumps(sorted(compiled)))
"""


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="nothing compiles")
def test_a_fit_after_the_helper_compiles_none_of_its_kernels(tmp_path: Path) -> None:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    subprocess.run(
        [sys.executable, "-m", "app", "warm-cache", "--kernels", "sweep"], env=env, check=True
    )
    out = subprocess.run(
        [sys.executable, "-c", _FIT_AND_LIST_COMPILES],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    compiled = set(json.loads(out.strip().splitlines()[-1]))
    assert compiled, "the fit compiled nothing: the test would not notice a wrong signature"
    assert compiled.isdisjoint(k.__name__ for k in precompile.SWEEP_KERNELS)


def test_an_unknown_group_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown kernel group 'nope'"):
        precompile.compile_group("nope")


# Every method fitted as the warm-up fits it; then each kernel of the engine lists the argument
# types it was compiled for. One more signature is a whole call tree compiled again (a literal
# -1 passed down cost C4s 10 s of a cold start); `_copy_into` is generic on purpose.
_FIT_ALL_AND_LIST_SIGNATURES = """
import json
from numba.core.registry import CPUDispatcher
import gc
from app.jobs.warmup.warm_cache import warm_numba_cache
warm_numba_cache()
many = {
    f"{d.py_func.__module__}.{d.py_func.__qualname__}": [str(s) for s in d.signatures]
    for d in gc.get_objects()
    if isinstance(d, CPUDispatcher) and d.py_func.__module__.startswith("app.")
    and len(d.signatures) > 1
}
print(json.dumps(many))
"""
GENERIC_ON_PURPOSE = {"app.engine.core.cec_state._copy_into"}


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="nothing compiles")
def test_every_kernel_is_compiled_for_one_signature() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _FIT_ALL_AND_LIST_SIGNATURES],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    many = json.loads(out.strip().splitlines()[-1])
    assert set(many) <= GENERIC_ON_PURPOSE, many
