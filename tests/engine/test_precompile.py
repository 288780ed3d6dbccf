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
        [sys.executable, "-m", "app", "warm-cache", "--kernels", "insertion"], env=env, check=True
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
    assert compiled.isdisjoint(k.__name__ for k in precompile.INSERTION_KERNELS)


def test_an_unknown_group_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown kernel group 'nope'"):
        precompile.compile_group("nope")
