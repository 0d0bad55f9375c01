"""Reading and writing the cache's sealed tables from tests, with the tests' key."""

import json
from pathlib import Path

from hpu_port import sealed


def read_table(path: Path) -> dict:
    body = sealed.unseal(path.stem, path.read_bytes(), sealed.key())
    assert body is not None, f"{path} is not sealed with the tests' key"
    return json.loads(body)


def write_table(path: Path, data: dict) -> None:
    body = json.dumps(data).encode()
    path.write_bytes(sealed.seal(path.stem, body, sealed.key()))
