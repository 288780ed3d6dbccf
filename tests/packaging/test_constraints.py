"""constraints.txt is the tested set: `make setup` installs with it, the Docker image builds with
it, so the virtualenv the tests run in must hold exactly its pins, no more and no fewer (a
dependency added to pyproject.toml without `make constraints` fails here, not in a rebuild)."""

import importlib.metadata
import re
from pathlib import Path

CONSTRAINTS = Path(__file__).parents[2] / "constraints.txt"
NOT_PINNED = {"clustering-workbench", "pip", "setuptools", "wheel"}  # scripts/freeze-constraints.sh


def _name(raw: str) -> str:
    return re.sub(r"[-_.]+", "-", raw).lower()  # PEP 503


def _pins() -> dict[str, str]:
    pins = {}
    for line in CONSTRAINTS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt pins exact versions only: {line!r}"
            pins[_name(name)] = version
    return pins


def test_the_virtualenv_holds_exactly_the_pinned_set() -> None:
    installed = {_name(d.metadata["Name"]): d.version for d in importlib.metadata.distributions()}
    pins = _pins()
    assert sorted(set(pins) - set(installed)) == [], "pinned but not installed"
    assert sorted(set(installed) - set(pins) - NOT_PINNED) == [], "installed but not pinned"
    assert {n: (pins[n], installed[n]) for n in pins if pins[n] != installed[n]} == {}


def test_the_pins_are_sorted_and_unique() -> None:
    lines = CONSTRAINTS.read_text().splitlines()[1:]
    assert len({_name(line.split("==")[0]) for line in lines}) == len(lines)
    assert lines == sorted(lines, key=str.upper)  # as `LC_ALL=C sort -f` writes them
