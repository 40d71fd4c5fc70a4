"""Fixtures for the remote embedder tests: a scripted server on loopback."""

from tests.support.scripted_http import scripted_server

__all__ = ["scripted_server"]
