"""mempipe: nightly memory for community chat bots."""

__version__ = "0.1.0"
