"""Domain errors. All are ``ValueError`` subclasses so callers can catch broadly.

The CLI turns a ``FabricError`` into a one-line message (exit 1); usage errors exit 2.
"""

__all__ = ["FabricError", "TooLarge", "BadInput", "close_matches"]


class FabricError(ValueError):
    """Base class of fabricsim's domain errors."""


class BadInput(FabricError):
    """A user's input (parameter, file, spec) is malformed; the message names it and the valid choices."""


class TooLarge(FabricError):
    """The flow-level problem would not fit in memory; the message names the cheaper mode."""


def close_matches(word: str, choices) -> str:
    """`` (did you mean a, b?)`` for the choices close to ``word``, or ``""``."""
    import difflib
    near = difflib.get_close_matches(str(word), [str(c) for c in choices], n=3, cutoff=0.5)
    return f" (did you mean {', '.join(near)}?)" if near else ""
