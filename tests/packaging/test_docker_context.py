"""The Docker build context is an allow-list that matches what the Dockerfile copies: nothing
else reaches the daemon (no .env, var/, databases), and nothing the build needs is left out.
(No Docker engine runs here; the files are read.)"""

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]


def _copied() -> set[str]:
    """Sources of the Dockerfile's COPY lines that read the build context."""
    sources: set[str] = set()
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        words = line.split()
        if words[:1] == ["COPY"] and not any(w.startswith("--from=") for w in words):
            sources.update(w.rstrip("/") for w in words[1:-1])
    return sources


def test_the_build_context_is_exactly_what_the_dockerfile_copies() -> None:
    rules = [
        r.strip()
        for r in (ROOT / ".dockerignore").read_text().splitlines()
        if r.strip() and not r.startswith("#")
    ]
    assert rules[0] == "*", "an allow-list starts by ignoring everything"
    allowed = {r[1:].rstrip("/") for r in rules if r.startswith("!")}
    assert allowed == _copied()
    for path in allowed:
        assert (ROOT / path).exists(), path
    assert {"**/__pycache__", "**/*.pyc"} <= set(rules)


def test_base_images_are_named_with_a_version() -> None:
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.startswith("FROM "):
            image = line.split()[1]
            assert re.fullmatch(r"[\w./-]+:[\w.-]+(@sha256:[0-9a-f]{64})?", image), image
