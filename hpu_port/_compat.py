"""What differs between the Python versions hpu-port runs on."""

import sys
from types import ModuleType


def toml() -> ModuleType:
    """The TOML reader (``tomllib``), imported when a TOML file is to be read:
    a run with its rules cached and no configuration file never needs it."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on older interpreters only
        import tomli as tomllib
    return tomllib


try:
    # The interpreter's own BLAKE2: importing hashlib also loads OpenSSL, which
    # costs a pre-commit run more than all of its hashing.
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - interpreters without the built-in module
    from hashlib import blake2b

__all__ = ["blake2b", "toml"]
