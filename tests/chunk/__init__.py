"""Tests of the chunking layer (src/ragd/chunk)."""
