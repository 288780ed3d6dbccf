"""Why queued runs wait, as the executor last saw it: no Dask scheduler answering, a scheduler
with no worker, or only workers that cannot import the app. The run's API answer and the
workspace say it beside "queued", so a run that cannot start is not a silent one (before,
only /health said so). None when nothing stops runs from starting (they wait their turn)."""

import threading

_lock = threading.Lock()
_reason: str | None = None


def set_reason(reason: str | None) -> None:
    global _reason
    with _lock:
        _reason = reason


def reason() -> str | None:
    with _lock:
        return _reason
