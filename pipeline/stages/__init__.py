"""The three stages (daily, historical, merge) and the facts operations. Each stage is a pure
function of its inputs: it computes a row only when the input hash changed."""

from .context import RunContext, RunStats

__all__ = ["RunContext", "RunStats"]
