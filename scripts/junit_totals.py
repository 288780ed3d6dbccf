"""Print one closing line for all pytest runs of a CI job: 'ci: N passed, N failed, N skipped'."""

import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def main(paths: list[str]) -> None:
    tests = failed = skipped = 0
    for path in paths:
        if not Path(path).exists():
            continue
        root = ET.parse(path).getroot()
        suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
        for suite in suites:
            tests += int(suite.get("tests", 0))
            failed += int(suite.get("failures", 0)) + int(suite.get("errors", 0))
            skipped += int(suite.get("skipped", 0))
    passed = tests - failed - skipped
    print(f"ci: {passed} passed, {failed} failed, {skipped} skipped")


if __name__ == "__main__":
    main(sys.argv[1:])
