"""Test support shared across test folders (scripted upstream servers and the like)."""
