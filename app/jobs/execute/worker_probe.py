"""What the app asks each Dask worker to find out whether it can run the app's tasks.

The function travels by name: a worker that cannot import this module (the app not installed
there, or another package named `app` first on its path) fails to unpickle it, and that failure
is the answer. Such a worker takes tasks and fails every one of them, so the health endpoint
names it."""

from app import __version__


def app_version() -> str:
    """The app's version as the worker imports it (a mismatch is reported too)."""
    import app.jobs.run.runner  # noqa: F401  (the modules a run's task needs)

    return __version__
