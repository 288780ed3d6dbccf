"""What a run stores as JSON has no inf or NaN (PostgreSQL's JSON type refuses them)."""

import json
import math

from app.jobs.run.runner import json_safe


def test_non_finite_floats_become_null_at_any_depth() -> None:
    stored = json_safe(
        {"energy": math.inf, "means": [[1.0, -math.inf], (math.nan, 2.5)], "n": 3, "name": "x"}
    )
    assert stored == {"energy": None, "means": [[1.0, None], [None, 2.5]], "n": 3, "name": "x"}
    json.dumps(stored, allow_nan=False)  # strict JSON, as PostgreSQL wants it
