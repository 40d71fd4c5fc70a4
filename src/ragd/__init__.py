"""ragd: one self-hosted retrieval-augmented generation service."""

__version__ = "0.1.0"
