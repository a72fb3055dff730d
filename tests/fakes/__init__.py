"""Test doubles for external services (see README.md)."""
