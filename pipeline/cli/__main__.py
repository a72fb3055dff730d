"""`python -m pipeline.cli`: the same as the `mempipe` command."""

from .main import main

main()
