"""Reading a user's input file: one place that turns every way a read can fail into a one-line ``BadInput``.

Public names
------------
read_input_bytes(path, what) -> bytes
    The file's bytes, refusing a directory, a special file (``/dev/zero``, a FIFO, a socket), a file
    over :data:`MAX_INPUT_BYTES`, or an unreadable one, each in one line that names the file and ``what``
    was expected.
read_input_text(path, what) -> str
    The same, decoded as UTF-8 (a byte-order mark is dropped); a byte that is not UTF-8 is named with
    its line.
read_records(path, what, parse) -> list
    A JSON-lines results file (``--resume``) parsed record by record: a line that is not one of its
    records is refused with its line number, except a last line cut short by a killed run.
trim_cut_line(path)
    Drop that cut-short last line before a resumed run appends, so the file stays whole records.
"""
from __future__ import annotations

import os
import stat

from .errors import BadInput

__all__ = ["read_input_bytes", "read_input_text", "read_records", "trim_cut_line", "MAX_INPUT_BYTES"]

# The largest input file read (I: a bound so a huge or endless file is refused before it is read, not a
# limit any real input comes near: the biggest input in tests/data and examples/ is 14 KB (tests/data/moe/deepep.toml),
# and a 1 GiB traffic CSV already holds a 10,000 x 10,000 matrix). Library users may raise it.
MAX_INPUT_BYTES = 1 << 30


def read_input_bytes(path, what: str) -> bytes:
    """The bytes of a user's input file.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    what : str
        What the file should be, for the message (``"a calibration TOML file"``).

    Returns
    -------
    bytes

    Raises
    ------
    BadInput
        A directory, a special file, a file over ``MAX_INPUT_BYTES``, or one that cannot be read.

    Examples
    --------
    >>> read_input_bytes("/", "a parts TOML file")
    Traceback (most recent call last):
    fabricsim.topo.errors.BadInput: /: is a directory; expected a parts TOML file
    """
    name = os.fspath(path)
    try:
        st = os.stat(name)
    except OSError as exc:
        raise BadInput(f"{name}: cannot read ({exc.strerror or exc}); expected {what}") from None
    if stat.S_ISDIR(st.st_mode):
        raise BadInput(f"{name}: is a directory; expected {what}")
    if not stat.S_ISREG(st.st_mode):
        raise BadInput(f"{name}: not a regular file (a device, pipe or socket); expected {what}")
    if st.st_size > MAX_INPUT_BYTES:
        raise BadInput(f"{name}: {st.st_size:,} bytes, more than the {MAX_INPUT_BYTES:,} an input file may "
                       f"have (fabricsim.topo.inputs.MAX_INPUT_BYTES); expected {what}")
    try:
        with open(name, "rb") as fh:
            return fh.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise BadInput(f"{name}: cannot read ({exc.strerror or exc}); expected {what}") from None


def read_input_text(path, what: str) -> str:
    """The text of a user's input file, UTF-8 (a byte-order mark is dropped).

    Parameters
    ----------
    path : str or os.PathLike
    what : str
        What the file should be, for the message.

    Returns
    -------
    str

    Raises
    ------
    BadInput
        As :func:`read_input_bytes`, or a byte that is not UTF-8 (named with its line).
    """
    raw = read_input_bytes(path, what)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise BadInput(f"{os.fspath(path)}:{line}: not UTF-8 text (byte 0x{raw[exc.start]:02x}); "
                       f"expected {what}") from None


def read_records(path, what: str, parse) -> list:
    """The records of a JSON-lines results file that a run appends to and a rerun resumes from.

    Parameters
    ----------
    path : str or os.PathLike
        The file; a file that does not exist yet has no records.
    what : str
        What the file should hold, for the messages (``"a sweep's results"``).
    parse : callable
        ``parse(obj) -> record`` for one decoded JSON line; raises ``KeyError``, ``TypeError``,
        ``ValueError`` or ``AttributeError`` when ``obj`` is not a record of this kind.

    Returns
    -------
    list
        ``parse`` of every line, in order (blank lines skipped).

    Raises
    ------
    BadInput
        As :func:`read_input_text` (a directory, a device or FIFO, a huge or non-UTF-8 file), or a line
        other than the last that is not a record: the file is someone else's, and appending to it
        would mix two kinds of data.  The last line alone may be cut short (a killed run); it is
        skipped.

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp(); f = os.path.join(d, "r.jsonl")
    >>> _ = open(f, "w").write('{"x": 1}\\n{"x": 2}\\n{"x": ')
    >>> read_records(f, "a test's results", lambda o: int(o["x"]))
    [1, 2]
    >>> _ = open(f, "w").write('{"y": 1}\\n{"x": 2}\\n')
    >>> read_records(f, "a test's results", lambda o: int(o["x"]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    fabricsim.topo.errors.BadInput: ...r.jsonl:1: not one of a test's results (a results file from another tool or command?); give a new file
    """
    import json

    if not os.path.lexists(os.fspath(path)):
        return []
    text = read_input_text(path, f"a JSON-lines file of {what}")
    lines = [(i, line) for i, line in enumerate(text.splitlines(), 1) if line.strip()]
    out = []
    for k, (i, line) in enumerate(lines):
        try:
            out.append(parse(json.loads(line)))
        except (ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError):
            if k == len(lines) - 1 and not text.endswith("\n"):
                break                           # the last line, cut short by a killed run
            raise BadInput(f"{os.fspath(path)}:{i}: not one of {what} (a results file from another tool or "
                           f"command?); give a new file") from None
    return out


def trim_cut_line(path) -> None:
    """Cut a results file back to its last complete line (a killed run's partial record goes).

    Parameters
    ----------
    path : str or os.PathLike
        A JSON-lines file a run is about to append to (nothing happens when it does not exist,
        is empty or ends with a newline).

    Raises
    ------
    BadInput
        The file cannot be read or written.
    """
    name = os.fspath(path)
    try:
        if not os.path.isfile(name) or os.path.getsize(name) == 0:
            return
        with open(name, "rb+") as fh:
            data = fh.read(MAX_INPUT_BYTES + 1)
            if data.endswith(b"\n"):
                return
            fh.truncate(data.rfind(b"\n") + 1)
    except OSError as exc:
        raise BadInput(f"{name}: cannot write ({exc.strerror or exc}); expected a results file") from None
