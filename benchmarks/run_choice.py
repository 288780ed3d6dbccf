"""How the benchmarks print a run's choice between fits (its ``metrics.choice``)."""

from typing import Any


def describe_choice(choice: dict[str, Any]) -> str:
    """A run's choice between fits (``metrics.choice``): what was kept, and every candidate's
    share of stray items (labeled unlike most of their neighbours; the CEC family) or how far
    each fit's components moved from their scribbles (PPC, in pooled standard deviations)."""
    if "scribble_drift" in choice:
        drifts = ", ".join(f"{w}: {d:.2f}" for w, d in choice["scribble_drift"].items())
        return f"kept {choice['chosen']} (scribble drift by weight: {drifts})"
    scores = ", ".join(f"{name} {value:.3%}" for name, value in choice["stray_fraction"].items())
    return f"kept {choice['chosen']} (stray items: {scores})"
