"""CUDA sources (`.cu`, `.cuh`): read as a whole; comments are `//` and `/* */`."""

from __future__ import annotations

from hpu_port.formats import Document


class CudaDocument(Document):
    format = "cuda"
    language = "cuda"
    comment = "//"


def parse(text: str, path: str = "", file_type: str = "cuda") -> CudaDocument:
    return CudaDocument(text, path)
