"""Traffic matrices from files: the bytes each rank of a group sends each other rank.

A matrix is ``n x n`` bytes, row ``a`` = what rank ``a`` of the group sends, column
``b`` = what rank ``b`` receives; the diagonal stays on the chip (it counts in the
totals, it never crosses a link).  Files are CSV (comma separated numbers, one row per
line; blank lines and lines starting with ``#`` are skipped) or NumPy ``.npy``.  A
path is one file (the same matrix for every group, or a ``.npy`` of shape
``(groups, n, n)``) or a directory holding one ``.csv``/``.npy`` per group, taken in
sorted file-name order.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ...topo.errors import BadInput
from ...topo.inputs import read_input_text

__all__ = ["load_matrix", "check_matrix", "summarize", "distinct_flow_sizes"]

SUFFIXES = (".csv", ".npy")


def load_matrix(path, n: int, n_groups: int = 1) -> np.ndarray:
    """Read a traffic matrix for ``n_groups`` groups of ``n`` ranks.

    Parameters
    ----------
    path : a ``.csv`` or ``.npy`` file, or a directory of one such file per group.
    n : ranks per group.
    n_groups : number of groups (a directory must hold exactly this many files).

    Returns
    -------
    ndarray
        ``(n, n)`` bytes (one file: every group alike) or ``(n_groups, n, n)``.

    Raises
    ------
    BadInput
        One line naming the file and the row/field at fault: unreadable, not UTF-8,
        empty, non-numeric, wrong shape, negative, nan/inf, or a directory whose file
        count is not ``n_groups``.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "t.csv")
    >>> _ = open(p, "w").write("0,1\\n2,0\\n")
    >>> load_matrix(p, 2).tolist()
    [[0.0, 1.0], [2.0, 0.0]]
    """
    p = Path(path)
    if p.is_dir():
        files = sorted(f for f in p.iterdir() if f.is_file() and f.suffix.lower() in SUFFIXES)
        if len(files) != n_groups:
            raise BadInput(f"{p}: holds {len(files)} matrix file(s) (.csv/.npy); the placement has {n_groups} "
                           f"group(s), one file each (taken in sorted name order)")
        return np.stack([_read_one(f, n, groups=None) for f in files])
    if not p.exists():
        raise BadInput(f"{p}: no such file or directory (a traffic matrix .csv/.npy or a directory of them)")
    return _read_one(p, n, groups=n_groups)


def _read_one(p: Path, n: int, groups: int | None) -> np.ndarray:
    if p.suffix.lower() == ".npy":
        try:
            M = np.load(p, allow_pickle=False)
        except Exception as exc:      # numpy raises ValueError, OSError, EOFError, SyntaxError ... on junk
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise BadInput(f"{p}: not a readable .npy array ({msg})") from None
        if not isinstance(M, np.ndarray):
            if hasattr(M, "close"):
                M.close()
            raise BadInput(f"{p}: an .npz archive, not one .npy array")
        if M.dtype.kind not in "iuf":
            raise BadInput(f"{p}: holds {M.dtype} values; a traffic matrix holds numbers of bytes")
        M = M.astype(np.float64)
        if groups is not None and M.ndim == 3 and M.shape == (groups, n, n):
            for k in range(groups):
                check_matrix(M[k], n, f"{p} (matrix {k})")
            return M
    else:
        M = _read_csv(p)
    check_matrix(M, n, str(p))
    return M


def _read_csv(p: Path) -> np.ndarray:
    text = read_input_text(p, "a traffic matrix as CSV or .npy")
    rows: list[list[float]] = []
    width = None
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        fields = [f.strip() for f in s.split(",")]
        vals = []
        for i, f in enumerate(fields, 1):
            try:
                v = float(f)
            except ValueError:
                raise BadInput(f"{p}: line {lineno}, field {i}: {f!r} is not a number of bytes") from None
            if not math.isfinite(v):
                raise BadInput(f"{p}: line {lineno}, field {i}: {f!r} is not finite; bytes must be finite")
            if v < 0:
                raise BadInput(f"{p}: line {lineno}, field {i}: {f!r} is negative; bytes must be >= 0")
            vals.append(v)
        if width is not None and len(vals) != width:
            raise BadInput(f"{p}: line {lineno} has {len(vals)} fields; the rows before it have {width}")
        width = len(vals)
        rows.append(vals)
    if not rows:
        raise BadInput(f"{p}: empty; expected one row of bytes per rank")
    return np.asarray(rows, dtype=np.float64)


def check_matrix(M: np.ndarray, n: int, where: str = "traffic") -> np.ndarray:
    """Refuse (one line, naming ``where``) a matrix that is not ``n x n`` finite bytes >= 0 with some bytes."""
    M = np.asarray(M)
    if M.ndim != 2 or M.shape != (n, n):
        raise BadInput(f"{where}: a {' x '.join(map(str, M.shape)) or 'scalar'} matrix; a group of {n} ranks "
                       f"needs {n} x {n} (row a = bytes rank a sends each rank)")
    if M.dtype.kind not in "iuf":
        raise BadInput(f"{where}: holds {M.dtype} values; a traffic matrix holds numbers of bytes")
    bad = ~np.isfinite(M)
    if bad.any():
        r, c = map(int, np.argwhere(bad)[0])
        raise BadInput(f"{where}: row {r + 1}, field {c + 1} is {M[r, c]}; bytes must be finite")
    neg = M < 0
    if neg.any():
        r, c = map(int, np.argwhere(neg)[0])
        raise BadInput(f"{where}: row {r + 1}, field {c + 1} is {M[r, c]:g}; bytes must be >= 0")
    if not M.any():
        raise BadInput(f"{where}: every entry is 0; nothing to send")
    return M


def summarize(T: np.ndarray) -> dict[str, float]:
    """Totals of an ``(n, n)`` or ``(groups, n, n)`` matrix, over every group it covers.

    ``bytes_total`` every byte (diagonal included), ``bytes_local`` the diagonal (stays
    on the chip), ``bytes_network`` the rest, ``imbalance`` max / mean over ranks of the
    bytes each rank receives.

    >>> summarize(np.array([[1.0, 3.0], [1.0, 3.0]]))["imbalance"]
    1.5
    """
    T = np.asarray(T, dtype=np.float64)
    T3 = T[None] if T.ndim == 2 else T
    local = float(np.trace(T3, axis1=1, axis2=2).sum())
    total = float(T3.sum())
    recv = T3.sum(axis=1).ravel()
    return {"bytes_total": total, "bytes_network": total - local, "bytes_local": local,
            "imbalance": float(recv.max() / recv.mean()) if recv.mean() > 0 else float("nan")}


def distinct_flow_sizes(T: np.ndarray) -> tuple[int, int]:
    """(distinct off-diagonal non-zero byte counts, off-diagonal non-zero flows) of a matrix."""
    T = np.asarray(T, dtype=np.float64)
    T3 = T[None] if T.ndim == 2 else T
    off = T3[:, ~np.eye(T3.shape[-1], dtype=bool)]
    nz = off[off > 0]
    return int(np.unique(nz).size), int(nz.size)
