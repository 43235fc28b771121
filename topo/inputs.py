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
"""
from __future__ import annotations

import os
import stat

from .errors import BadInput

__all__ = ["read_input_bytes", "read_input_text", "MAX_INPUT_BYTES"]

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
