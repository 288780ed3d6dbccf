"""The clustering workbench. Its version is the installed distribution's, the one place it is
written being pyproject.toml."""

from importlib.metadata import PackageNotFoundError, version

DISTRIBUTION = "clustering-workbench"

try:
    __version__ = version(DISTRIBUTION)
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"
