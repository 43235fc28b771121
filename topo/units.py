"""Units a user spells: buffer sizes (``64MiB``).  One rule for every place a size is read (``--size``,
a mix file's ``size``, a design space's workload)."""
from __future__ import annotations

import math
import re

from .errors import BadInput

__all__ = ["SIZE_UNITS", "parse_size"]

# bytes per unit; SI (KB = 1e3) and binary (KiB = 2**10) prefixes, as nccl-tests and the tool print them
SIZE_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
              "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_SIZE = re.compile(r"\s*(-?)([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*")


def parse_size(value, param: str = "size") -> float:
    """A buffer size -> bytes: ``"64MiB"`` -> 67108864.0; a bare number (or an int/float) is bytes.

    Units B, KiB, MiB, GiB, TiB, KB, MB, GB, TB.  The prefix ignores case (``64mB`` = 64 MB) but the
    final letter does not: ``B`` is bytes and a lower-case ``b`` means bits (``64Gb`` = 64 gigabits, as
    the tool prints Gb/s), which no buffer size is given in, so it is refused rather than read as bytes.
    The size must be a whole number of bytes >= 1.

    Parameters
    ----------
    value : str, int or float
        The size as the user wrote it.
    param : str
        The parameter it came in by, carried by the ``BadInput`` a bad size raises.

    Raises
    ------
    BadInput
        Negative, not a size, bits, not finite, under 1 B or not a whole number of bytes.

    Examples
    --------
    >>> parse_size("64MiB"), parse_size("1GB"), parse_size("2kB"), parse_size(4096)
    (67108864.0, 1000000000.0, 2000.0, 4096.0)
    """
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise BadInput(f"size {value!r} is not a number of bytes", param=param)
    if isinstance(value, str):
        m = _SIZE.fullmatch(value)
        if m and m[1]:
            raise BadInput(f"size {value!r}: the size must be positive (e.g. 64MiB)", param=param)
        number, unit = (m[2], m[3]) if m else ("", "")
        if unit.endswith("b"):
            raise BadInput(f"size {value!r}: a lower-case b is bits; sizes are bytes, spelled with B "
                           f"(e.g. {number}{unit[:-1].upper().replace('I', 'i')}B)", param=param)
        if not m or (unit and unit.lower() not in SIZE_UNITS):
            raise BadInput(f"size {value!r} is not a size; use a number with B, KiB, MiB, GiB, TiB, KB, MB, GB "
                           f"or TB (e.g. 64MiB)", param=param)
        size = float(number) * SIZE_UNITS.get(unit.lower(), 1)
    else:
        size = float(value)
    if size < 0:
        raise BadInput(f"size {value!r}: the size must be positive (e.g. 64MiB)", param=param)
    if not (math.isfinite(size) and size >= 1):
        raise BadInput(f"size {value!r}: the size must be a finite number of bytes >= 1 B", param=param)
    if size != math.floor(size):
        raise BadInput(f"size {value!r} is {size:g} bytes; a size is a whole number of bytes", param=param)
    return size
