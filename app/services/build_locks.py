"""One lock per thing built once on first request (a pyramid of a picture, its channels, or a
run's mask), so two requests in this process never build the same thing at the same time. A
second server building it meanwhile only wastes the work: the later write replaces the earlier."""

import threading

_locks: dict[tuple[str, int], threading.Lock] = {}
_guard = threading.Lock()


def build_lock(owner: tuple[str, int]) -> threading.Lock:
    """The lock of ``owner`` (what is built, and whose: ("dataset", 7), ("channels", 7))."""
    with _guard:
        return _locks.setdefault(owner, threading.Lock())
