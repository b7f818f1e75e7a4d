"""The package version: the one place it is written (``pyproject.toml`` reads it here, as the build backend's dynamic
version; CHANGELOG.md has a heading for each)."""

__all__ = ["__version__"]

__version__ = "0.1.0"
