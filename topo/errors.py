"""Domain errors. All are ``ValueError`` subclasses so callers can catch broadly.

The CLI turns a ``FabricError`` into a one-line message (exit 1); usage errors exit 2.
"""

__all__ = ["FabricError", "NoRoute", "BrokenGroup", "TooLarge", "BadInput"]


class FabricError(ValueError):
    """Base class of fabricsim's domain errors."""


class BadInput(FabricError):
    """A user's input (parameter, file, spec) is malformed; the message names it and the valid choices."""


class NoRoute(FabricError):
    """A pair of chips has no path where one is required."""


class BrokenGroup(FabricError):
    """A collective group lost a chip."""


class TooLarge(FabricError):
    """The flow-level problem would not fit in memory; the message names the cheaper mode."""
