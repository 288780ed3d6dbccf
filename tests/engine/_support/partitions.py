"""Enumeration of set partitions for brute-force checks on tiny data sets."""

from __future__ import annotations

from collections.abc import Iterator


def set_partitions(n: int) -> Iterator[list[int]]:
    """All partitions of range(n) as restricted-growth label lists (Bell(n) of them)."""

    def grow(prefix: list[int], top: int) -> Iterator[list[int]]:
        if len(prefix) == n:
            yield prefix
            return
        for c in range(top + 2):
            yield from grow([*prefix, c], max(top, c))

    yield from grow([0], 0)
