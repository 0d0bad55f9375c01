"""What differs between the Python versions hpu-port runs on."""

import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on older interpreters only
    import tomli as tomllib

__all__ = ["tomllib"]
