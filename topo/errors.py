"""Domain errors. All are ``ValueError`` subclasses so callers can catch broadly.

The CLI turns a ``FabricError`` into a one-line message (exit 1); a ``BadInput`` that names the
parameter it is about (``param``) becomes a one-line error naming that parameter's option (exit 2).
"""
from contextlib import contextmanager

__all__ = ["FabricError", "TooLarge", "BadInput", "about", "close_matches"]


class FabricError(ValueError):
    """Base class of fabricsim's domain errors."""


class BadInput(FabricError):
    """A user's input (parameter, file, spec) is malformed; the message names it and the valid choices.

    Parameters
    ----------
    *args
        The message (as any exception's arguments).
    param : str, optional
        The parameter the input came in by, as the entry point names it (``"group_size"``, ``"mesh"``,
        ``"fails"`` ...), so a caller can point at its own spelling of it (the CLI's ``--group-size``)
        without reading the message.  None: not known here (:func:`about` may fill it in higher up).

    Examples
    --------
    >>> e = BadInput("group size 7 does not divide 72 chips", param="group_size")
    >>> e.param, str(e)
    ('group_size', 'group size 7 does not divide 72 chips')
    """

    def __init__(self, *args, param: str | None = None):
        super().__init__(*args)
        self.param = param

    def __reduce__(self):   # keeps ``param`` across processes (sweep workers raise it back to the parent)
        return (self.__class__, self.args, {"param": self.param})


class TooLarge(FabricError):
    """The flow-level problem would not fit in memory; the message names the cheaper mode."""


@contextmanager
def about(param: str):
    """A ``BadInput`` raised inside that names no parameter is about ``param``.

    Examples
    --------
    >>> try:
    ...     with about("mesh"):
    ...         raise BadInput("tp=7 covers 7 chips")
    ... except BadInput as exc:
    ...     print(exc.param)
    mesh
    """
    try:
        yield
    except BadInput as exc:
        if exc.param is None:
            exc.param = param
        raise


def close_matches(word: str, choices) -> str:
    """`` (did you mean a, b?)`` for the choices close to ``word``, or ``""``."""
    import difflib
    near = difflib.get_close_matches(str(word), [str(c) for c in choices], n=3, cutoff=0.5)
    return f" (did you mean {', '.join(near)}?)" if near else ""
