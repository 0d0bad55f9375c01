"""hpu-port: rewrite PyTorch CUDA code for Intel Gaudi (HPU)."""

__version__ = "0.1.0"
