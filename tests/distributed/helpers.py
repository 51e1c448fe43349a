"""Shared helpers for the distributed tests."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A TCP port nobody listens on right now (for a rendezvous on localhost)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
