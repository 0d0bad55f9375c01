"""What code is whose device.

``evidence``: the one table of what code is NVIDIA's and which devices there
are (``rules/_device.toml``, plus a project's additions), which every rule
that tells NVIDIA-only or another device's code from code the port can change
reads.
"""
