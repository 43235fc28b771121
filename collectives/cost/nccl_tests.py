"""nccl-tests (and rccl-tests) stdout -> typed measurements.

`parse_log` reads a file, `parse_text` a string; both return one `NcclRun` per
benchmark run found (a file may hold several, concatenated), each with its
`NcclPoint` rows.  What a log gives, a run carries: collective, ranks, NCCL
algorithm and protocol when the log says which, devices, hosts, versions and the
``# Avg bus bandwidth`` trailer.

What is read
------------
* Data rows under a column header ``#  size  count  type [redop] [root]  time algbw
  busbw #wrong|error  time algbw busbw #wrong|error`` (every nccl-tests version since
  2.0: the ``redop``/``root`` columns and the ``#wrong`` / older ``error`` column may
  be there or not).  Each column group gives one point: the first ``out-of-place``,
  the second ``in-place`` (the order of the ``out-of-place  in-place`` banner above
  the header when there is one).
* Run boundaries: a ``# nccl-tests version``, ``# Collective test starting:``,
  ``# nThread`` or column-header line seen a second time, or after data rows,
  starts a new run.
* Collective: the ``*_perf`` binary named anywhere (a command line, ``# Collective
  test starting: all_reduce_perf``), else the ``collective=`` argument.  A setting
  holds until the file changes it, so runs concatenated after one command line all
  take its collective.
* Ranks: the number of distinct ``#  Rank  N ...`` lines; else ``nranks N`` (NCCL's
  ``Init COMPLETE`` lines, or an annotation); else ``-np``/``-n`` x ``-g`` x ``-t``
  of a command line naming the binary; else the ``nranks=`` argument; else None.
* Algorithm and protocol: ``NCCL_ALGO=...`` / ``NCCL_PROTO=...`` anywhere (env
  echo, ``export``, ``mpirun -x``), or NCCL's ``NCCL_ALGO set by environment to
  ...`` INFO line; the value is kept as written (``Ring``, ``^NVLS``, ``LL128``).
* ``#@ key=value ...`` lines are annotations for logs reconstructed from published
  tables (keys ``collective``, ``nranks``, ``algorithm``, ``protocol``); ``##``
  lines are free comments and are ignored entirely (source citations go there).
* Anything else (NCCL INFO lines, mpirun noise, prompts) is noise and is counted
  in ``NcclRun.noise_lines``.  Open MPI ``--tag-output`` (``[1,0]<stdout>:``) and
  srun ``--label`` (``0: ``) prefixes are stripped.

Nothing is dropped silently: a column group with an ``N/A`` time, algbw or busbw,
or with a nonzero ``#wrong`` count (failed validation), gives no point and one
entry in ``NcclRun.skipped`` naming the line and the reason (``N/A`` in the
``#wrong`` column alone means validation was off, ``-c 0``, and keeps the point).
Malformed input -- a bad number, a data row with the wrong number of fields, a
file without data rows, non-UTF-8 bytes, a binary file, a directory, an unknown
collective -- raises `~fabricsim.topo.errors.BadInput` with one line
``path:line: what is wrong``.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field

from ...topo.errors import BadInput, close_matches
from ...topo.inputs import read_input_bytes

__all__ = ["NcclPoint", "NcclRun", "parse_log", "parse_text", "BINARIES", "COLLECTIVES"]

# nccl-tests / rccl-tests binary stem (``<stem>_perf``, ``<stem>_perf_mpi``) -> collective name
BINARIES = {"all_reduce": "all-reduce", "all_gather": "all-gather", "reduce_scatter": "reduce-scatter",
            "alltoall": "all-to-all", "alltoallv": "all-to-all-v", "broadcast": "broadcast",
            "reduce": "reduce", "gather": "gather", "scatter": "scatter", "sendrecv": "sendrecv",
            "hypercube": "hypercube"}
COLLECTIVES = tuple(BINARIES.values())

_FIXED = ("size", "count", "type", "redop", "root")     # leading columns, in nccl-tests order
_GROUP = ("time", "algbw", "busbw")                      # then per column group, + #wrong | error
_CHECK = ("#wrong", "error")
_MAX_DIGITS = 20                                         # guards int() against absurd tokens
# The most lines a log may have (I: a bound on input, so a huge log is refused at once instead of parsing and
# fitting for minutes with no output; a run of nccl-tests is ~30-60 lines, so this is ~2,000 runs, and
# parsing it takes a few seconds).  Library users may raise it.
MAX_LOG_LINES = 100_000

_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_NA = "N/A"
_PREFIX = re.compile(r"^(?:\[\d+,\d+\]<std(?:out|err)>:\s?|\d+:\s)")
_BINARY = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(sorted(BINARIES, key=len, reverse=True))
                     + r")_perf(?:_mpi)?(?![A-Za-z0-9_])")
_STARTING = re.compile(r"^#\s*Collective test starting:\s*(\S+)")
_VERSION = re.compile(r"^#\s*nccl-tests version\s+(\S+)")
_NTHREAD = re.compile(r"^#\s*nThread\s+(\d{1,9})\s+nGpus\s+(\d{1,9})(.*)$")
_RANK = re.compile(r"^#\s*Rank\s+(\d{1,9})\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+"
                   r"\[[^\]]*\]\s*(.*?)\s*$")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S+)")
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d{1,18})\b")
_NCCL_VERSION = re.compile(r"\b(?:NCCL|RCCL) version\s+([0-9][\w.+\-]*)")
# a value may be a list (NCCL_ALGO=Ring,NVLS): commas inside it are kept, a trailing one is not
_ENV = {"algorithm": re.compile(r"\bNCCL_ALGO(?:\s*=\s*|\s+set by environment to\s+)([^\s\"',;]+(?:,[^\s\"',;]+)*)"),
        "protocol": re.compile(r"\bNCCL_PROTO(?:\s*=\s*|\s+set by environment to\s+)([^\s\"',;]+(?:,[^\s\"',;]+)*)")}
_NRANKS = re.compile(r"\bnranks\s*[=:]?\s*(\d+)\b")
_ANNOTATION = re.compile(r"(\w+)=(\S+)")
# NCCL's per-call tuning line (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=TUNING; rank 0 only), src/enqueue.cc:
# since 2.19 '%s: %ld Bytes -> Algo %s proto %s channel{Lo..Hi}={%d..%d}' (F), before it
# '%ld Bytes -> Algo %d proto %d time %f' (F; some builds prefix the function name)
_TUNING = re.compile(r"(?:\b([A-Za-z]+):\s+)?(\d{1,19})\s+Bytes\s+->\s+Algo\s+(\w+)\s+proto\s+(\w+)")
# the numeric codes of the older line: NCCL_ALGO_* / NCCL_PROTO_* (src/include/device.h, nccl_tuner.h, F)
_ALGO_CODES = ("TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT")
_PROTO_CODES = ("LL", "LL128", "SIMPLE")
# NCCL function name (ncclFuncToString) -> collective
_NCCL_FUNCS = {"allreduce": "all-reduce", "allgather": "all-gather", "reducescatter": "reduce-scatter",
               "broadcast": "broadcast", "reduce": "reduce"}
_FAILURE = re.compile(r"Test (?:NCCL |CUDA |HIP )?failure|NCCL WARN|Segmentation fault|Killed")


@dataclass(frozen=True)
class NcclPoint:
    """One measurement: one column group (out-of-place or in-place) of one data row.

    ``size_bytes``, ``time_us``, ``algbw_GBps`` and ``busbw_GBps`` are as nccl-tests
    prints them (algbw = size / time in 1e9 B/s; busbw = algbw x the collective's
    factor, see nccl-tests' ``doc/PERFORMANCE.md``).  ``redop`` is ``""`` when the
    log has no ``redop`` column; ``line`` is the 1-based line of the row.
    """
    size_bytes: int
    count: int
    dtype: str
    redop: str
    time_us: float
    algbw_GBps: float
    busbw_GBps: float
    in_place: bool
    line: int


@dataclass(frozen=True)
class NcclRun:
    """One nccl-tests run: its points and what its header said.

    ``skipped`` lists, one ``path:line: ...`` string each, the column groups that
    gave no point (``N/A`` fields, a time of 0, failed validation); ``notes`` holds failure
    lines the run printed (``Test NCCL failure ...``), where ``nranks`` came from and,
    when the log names no binary, how the collective was inferred.  ``tuning`` holds
    NCCL's per-call choice where the log has its TUNING INFO lines: ``(bytes, algorithm,
    protocol, line)`` with NCCL's names (``RING``, ``NVLS``; ``LL128``) and NCCL's byte
    count (all-gather / reduce-scatter: per rank).  Header fields a log does not give are
    None (or empty tuples).
    """
    path: str
    collective: str
    nranks: int | None
    algorithm: str | None
    protocol: str | None
    points: tuple[NcclPoint, ...]
    skipped: tuple[str, ...] = ()
    first_line: int = 0
    last_line: int = 0
    nccl_version: str | None = None
    tests_version: str | None = None
    devices: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    n_threads: int | None = None
    n_gpus: int | None = None
    min_bytes: int | None = None
    max_bytes: int | None = None
    iters: int | None = None
    avg_busbw_GBps: float | None = None
    out_of_bounds: int | None = None
    noise_lines: int = 0
    notes: tuple[str, ...] = ()
    tuning: tuple[tuple[int, str, str, int], ...] = ()

    def select(self, *, in_place: bool = False) -> tuple[NcclPoint, ...]:
        """The points of one column group, in log order.

        Examples
        --------
        >>> run, = parse_text(_EXAMPLE)
        >>> [p.time_us for p in run.select(in_place=True)]
        [98.0, 4990.0]
        """
        return tuple(p for p in self.points if p.in_place == in_place)


def _canonical(name: str) -> str | None:
    key = re.sub(r"[-_ ]", "", name.strip().lower())
    key = re.sub(r"perf(mpi)?$", "", key)
    for stem, coll in BINARIES.items():
        if key in (stem.replace("_", ""), coll.replace("-", "")):
            return coll
    return None


def _collective_arg(collective: str | None) -> str | None:
    if collective is None:
        return None
    coll = _canonical(str(collective))
    if coll is None:
        raise BadInput(f"unknown collective {collective!r}{close_matches(collective, COLLECTIVES)}; "
                       f"choose one of: {', '.join(COLLECTIVES)}")
    return coll


@dataclass
class _Builder:
    """A run being read (mutable; frozen into `NcclRun` when it ends)."""
    first_line: int
    markers: set = field(default_factory=set)
    columns: tuple | None = None      # (fixed column names, [(in_place, has_check, check name)])
    columns_line: int = 0
    banner: tuple = ()                # ("out-of-place", "in-place") as the banner orders them
    points: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    rows: int = 0
    last_line: int = 0
    snapshot: dict | None = None      # the context (collective, algorithm, ...) at the first row
    ranks: dict = field(default_factory=dict)   # rank -> (host, device)
    header: dict = field(default_factory=dict)
    noise: int = 0
    notes: list = field(default_factory=list)
    redops: set = field(default_factory=set)      # redop / root column values seen (collective inference)
    roots: set = field(default_factory=set)
    first_row: int = 0
    tuning: list = field(default_factory=list)    # NCCL INFO '... Bytes -> Algo ... proto ...' lines


def _bad(path, line, what):
    return BadInput(f"{path}:{line}: {what}")


def _int(tok, path, line, what, minimum=0):
    if len(tok) > _MAX_DIGITS or not _INT.fullmatch(tok) or int(tok) < minimum:
        raise _bad(path, line, f"bad {what} {tok[:40]!r}: expected an integer >= {minimum}")
    return int(tok)


def _float(tok, path, line, what):
    if tok == _NA:
        return None
    if len(tok) > 40 or not _FLOAT.fullmatch(tok):
        raise _bad(path, line, f"bad {what} {tok[:40]!r}: expected a number or N/A")
    value = float(tok)
    if not math.isfinite(value) or value < 0:
        raise _bad(path, line, f"bad {what} {tok!r}: expected a finite number >= 0")
    return value


def _parse_columns(tokens, path, line):
    """``size count type ... time algbw busbw #wrong ...`` -> (fixed, groups)."""
    first = tokens.index("time")
    fixed = tuple(tokens[:first])
    if fixed[:1] != ("size",) or any(c not in _FIXED for c in fixed) or len(set(fixed)) != len(fixed):
        raise _bad(path, line, f"unrecognised column header {' '.join(tokens)!r}: expected "
                   f"'size count type [redop] [root] time algbw busbw [#wrong] ...'")
    groups, rest = [], list(tokens[first:])
    while rest:
        if tuple(rest[:3]) != _GROUP:
            raise _bad(path, line, f"unrecognised column group {' '.join(rest[:4])!r}: expected "
                       f"'time algbw busbw [#wrong|error]'")
        rest = rest[3:]
        check = rest.pop(0) if rest and rest[0] in _CHECK else None
        groups.append(check)
    return fixed, groups


def _row(b: _Builder, tokens, path, line):
    """One data row -> points appended to ``b`` (or entries in ``b.skipped``)."""
    fixed, groups = b.columns
    width = len(fixed) + sum(3 + (c is not None) for c in groups)
    if len(tokens) != width:
        raise _bad(path, line, f"data row has {len(tokens)} fields, the column header on line "
                   f"{b.columns_line} has {width}")
    vals = dict(zip(fixed, tokens))
    size = _int(vals["size"], path, line, "size")
    count = _int(vals["count"], path, line, "count") if "count" in vals else size
    dtype = vals.get("type", "")
    redop = vals.get("redop", "")
    for name, tok in (("type", dtype), ("redop", redop)):
        if tok and not _WORD.fullmatch(tok):
            raise _bad(path, line, f"bad {name} {tok[:40]!r}: expected a name such as float or sum")
    if "root" in vals:
        b.roots.add(_int(vals["root"], path, line, "root", minimum=-1))
    if redop:
        b.redops.add(redop.lower())
    if not b.first_row:
        b.first_row = line
    at = len(fixed)
    places = b.banner if len(b.banner) == len(groups) else ("out-of-place", "in-place", *(
        f"group {i}" for i in range(2, len(groups))))[:len(groups)]
    for check, place in zip(groups, places):
        t, alg, bus = (_float(tokens[at + k], path, line, w) for k, w in enumerate(_GROUP))
        why = None
        if check is not None:
            tok = tokens[at + 3]
            if check == "#wrong":
                wrong = None if tok == _NA else _int(tok, path, line, "#wrong count")
                if wrong:
                    why = f"#wrong is {wrong} (failed validation)"
            else:
                _float(tok, path, line, "error")
        at += 3 + (check is not None)
        missing = [w for w, v in zip(_GROUP, (t, alg, bus)) if v is None]
        if missing:
            why = f"{'/'.join(missing)} N/A"
        elif t == 0:
            why = "time 0 (below the printed resolution: not a measurement)"
        if why:
            b.skipped.append(f"{path}:{line}: {place} point of size {size} skipped: {why}")
            continue
        b.points.append(NcclPoint(size_bytes=size, count=count, dtype=dtype, redop=redop, time_us=t,
                                  algbw_GBps=alg, busbw_GBps=bus, in_place=(place == "in-place"), line=line))
    b.rows += 1
    b.last_line = line


def _command_ranks(line):
    """-np/-n/--ntasks x -g x -t from a command line that names a *_perf binary, or None."""
    m = _BINARY.search(line)
    if not m:
        return None
    launcher, args = line[:m.start()], line[m.end():]

    def opt(text, names):
        found = re.findall(r"(?:^|\s)(?:" + names + r")(?:\s+|=)(\d{1,9})(?=\s|$)", text)
        return int(found[-1]) if found else None
    procs = opt(launcher, r"-np|-n|--np|--ntasks") if launcher.strip() else None
    if procs is None:
        return None
    return procs * (opt(args, "-g|--ngpus") or 1) * (opt(args, "-t|--nthreads") or 1)


def _tuning(m, line):
    """A tuning-line match -> (collective or None, bytes, NCCL algorithm, NCCL protocol, line)."""
    func = _NCCL_FUNCS.get((m.group(1) or "").lower())
    algo, proto = m.group(3).upper(), m.group(4).upper()
    if algo.isdigit() and int(algo) < len(_ALGO_CODES):
        algo = _ALGO_CODES[int(algo)]
    if proto.isdigit() and int(proto) < len(_PROTO_CODES):
        proto = _PROTO_CODES[int(proto)]
    return func, int(m.group(2)), algo, proto, line


# What the columns say about the collective of a log that names no *_perf binary:
# the reductions nccl-tests' redop column prints (ncclRedOp_t names; 'none' for the
# collectives that do not reduce), and busbw / algbw, the bus factor nccl-tests applies
# (doc/PERFORMANCE.md, F): 2(n-1)/n all-reduce, (n-1)/n all-gather, reduce-scatter and
# all-to-all; broadcast, reduce and sendrecv (root >= 0 or factor 1) are not among them.
INFERABLE = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")
_REDUCE_OPS = {"sum", "prod", "max", "min", "avg", "mulsum", "premulsum"}
_FACTOR = {"all-reduce": lambda n: 2 * (n - 1) / n, "all-gather": lambda n: (n - 1) / n,
           "reduce-scatter": lambda n: (n - 1) / n, "all-to-all": lambda n: (n - 1) / n}
_RATIO_TOL = 0.02       # I: algbw/busbw print 2 decimals; over points with algbw >= 1 GB/s that is <= 1%
_RATIO_MIN_ALGBW = 1.0


def _bus_ratio(points) -> float | None:
    """The median busbw / algbw of the points whose algbw prints with 2 decimals to <= 1% (else all > 0)."""
    big = [p.busbw_GBps / p.algbw_GBps for p in points if p.algbw_GBps >= _RATIO_MIN_ALGBW]
    some = big or [p.busbw_GBps / p.algbw_GBps for p in points if p.algbw_GBps > 0]
    return sorted(some)[len(some) // 2] if some else None


def _infer_collective(b: _Builder, nranks, path, hint):
    """The collective of a run whose log names no binary: (collective, note), else BadInput.

    Rules (each keeps the `INFERABLE` collectives it allows): a ``redop`` column of
    reductions (sum, ...) keeps all-reduce and reduce-scatter, of ``none`` the other two;
    a ``root`` >= 0 keeps none (a rooted collective); busbw / algbw within 2% of
    2(n-1)/n keeps all-reduce, of (n-1)/n the other three (n from the log's rank count;
    without it, a ratio above 1.02 keeps all-reduce, below 0.98 the others).  One left:
    that one; none or several: BadInput naming ``--collective`` and the choices.
    """
    keep, said = list(INFERABLE), []
    redops = b.redops - {""}
    if redops and redops <= _REDUCE_OPS:
        keep = [c for c in keep if c in ("all-reduce", "reduce-scatter")]
        said.append(f"redop {'/'.join(sorted(redops))}")
    elif redops == {"none"}:
        keep = [c for c in keep if c not in ("all-reduce", "reduce-scatter")]
        said.append("redop none")
    if any(r >= 0 for r in b.roots):
        keep = []
        said.append(f"root {max(b.roots)} (a rooted collective: broadcast or reduce)")
    elif b.roots:
        said.append("root -1")
    ratio = _bus_ratio(b.points)
    if ratio is not None and nranks is not None and nranks > 1:
        match = [c for c in keep if abs(ratio - _FACTOR[c](nranks)) <= _RATIO_TOL * _FACTOR[c](nranks)]
        shown = ", ".join(sorted({f"{'2(n-1)/n' if c == 'all-reduce' else '(n-1)/n'} = {_FACTOR[c](nranks):.3g}"
                                  for c in INFERABLE}))
        said.append(f"busbw/algbw {ratio:.3g} for n={nranks} ({shown})")
        keep = match
    elif ratio is not None:
        if ratio > 1 + _RATIO_TOL:
            keep = [c for c in keep if c == "all-reduce"]
        elif ratio < 1 - _RATIO_TOL:
            keep = [c for c in keep if c != "all-reduce"]
        said.append(f"busbw/algbw {ratio:.3g} with the rank count unknown (2(n-1)/n >= 1 > (n-1)/n)")
    evidence = "; ".join(said) or "no redop, root or bandwidth columns to go by"
    at = b.first_row or b.first_line
    if hint is not None:
        if hint in INFERABLE and hint not in keep:
            raise _bad(path, at, f"collective={hint!r} was given (--collective) but the columns say otherwise "
                       f"({evidence}: {' or '.join(keep) or 'none of ' + ', '.join(INFERABLE)})")
        return hint, f"collective {hint} as given (the log names no *_perf binary)"
    if len(keep) == 1:
        return keep[0], f"collective {keep[0]} inferred from the columns ({evidence})"
    left = f"its columns leave {' or '.join(keep)}" if keep else f"its columns fit none of {', '.join(INFERABLE)}"
    raise _bad(path, at, f"cannot tell which collective this run measures: the log names no *_perf binary and "
               f"{left} ({evidence}); give --collective (collective=): one of {', '.join(INFERABLE)}")


def _finish(b: _Builder, path, hint_nranks) -> NcclRun:
    snap = b.snapshot
    nranks, how = None, None
    if b.ranks:
        nranks, how = len(b.ranks), "# Rank lines"
    elif snap["nranks"] is not None:
        nranks, how = snap["nranks"], snap["nranks_from"]
    elif hint_nranks is not None:
        nranks, how = hint_nranks, "nranks argument"
    if hint_nranks is not None and nranks != hint_nranks:
        raise _bad(path, b.first_line, f"the run has {nranks} ranks ({how}) but nranks={hint_nranks} was given")
    notes = list(b.notes)
    if how:
        notes.append(f"nranks from {how}")
    collective = snap["collective"]
    if not snap["collective_line"]:     # no binary named in the log: the hint, checked, or the columns
        collective, why = _infer_collective(b, nranks, path, collective)
        notes.append(why)
    tuning = tuple((size, algo, proto, line) for func, size, algo, proto, line in b.tuning
                   if func is None or func == collective)
    h = b.header
    return NcclRun(path=path, collective=collective, nranks=nranks, tuning=tuning, algorithm=snap["algorithm"],
                   protocol=snap["protocol"], points=tuple(b.points), skipped=tuple(b.skipped),
                   first_line=b.first_line, last_line=b.last_line,
                   nccl_version=snap["nccl_version"] or h.get("nccl_version"),
                   tests_version=h.get("tests_version"),
                   devices=tuple(dict.fromkeys(d for _, d in b.ranks.values() if d)),
                   hosts=tuple(dict.fromkeys(host for host, _ in b.ranks.values())),
                   n_threads=h.get("n_threads"), n_gpus=h.get("n_gpus"), min_bytes=h.get("min_bytes"),
                   max_bytes=h.get("max_bytes"), iters=h.get("iters"), avg_busbw_GBps=h.get("avg_busbw"),
                   out_of_bounds=h.get("out_of_bounds"), noise_lines=b.noise, notes=tuple(notes))


def parse_text(text: str, path: str = "<text>", *, collective: str | None = None,
               nranks: int | None = None) -> tuple[NcclRun, ...]:
    """Parse nccl-tests stdout held in a string.

    Parameters
    ----------
    text : str
        The log (any line endings).
    path : str
        The name used in error messages and in ``NcclRun.path``.
    collective : str, optional
        The collective when the log does not name its binary (``all-reduce``,
        ``all_reduce_perf``, ``allreduce`` ...); if the log names another, BadInput.
    nranks : int, optional
        The rank count when the log does not give it; if it gives another, BadInput.

    Returns
    -------
    tuple of NcclRun
        One per run, in file order.

    Raises
    ------
    BadInput
        ``path:line: what is wrong`` for malformed input (see the module docstring).

    Examples
    --------
    >>> run, = parse_text(_EXAMPLE)
    >>> run.collective, run.nranks, run.algorithm, run.devices
    ('all-reduce', 8, 'Ring', ('Example GPU',))
    >>> [(p.size_bytes, p.busbw_GBps, p.in_place) for p in run.points][:2]
    [(1048576, 18.35, False), (1048576, 18.72, True)]
    >>> run.skipped
    ()
    >>> parse_text("#  size count type time algbw busbw\\n  8  2  float  x  0.0  0.0", collective="all-reduce")
    Traceback (most recent call last):
    ...
    fabricsim.topo.errors.BadInput: <text>:2: bad time 'x': expected a number or N/A
    """
    if not isinstance(text, str):
        raise BadInput(f"{path}: expected text, got {type(text).__name__}")
    lines = text.count("\n") + 1
    if lines > MAX_LOG_LINES:
        raise BadInput(f"{path}: {lines:,} lines, more than the {MAX_LOG_LINES:,} a log may have "
                       f"(fabricsim.collectives.cost.nccl_tests.MAX_LOG_LINES): give the runs to fit in a smaller file")
    hint = _collective_arg(collective)
    if nranks is not None and (isinstance(nranks, bool) or not isinstance(nranks, int) or nranks < 1):
        raise BadInput(f"nranks must be a positive integer, got {nranks!r}")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if "\x00" in text:
        at = next(i for i, s in enumerate(lines, 1) if "\x00" in s)
        raise _bad(path, at, "binary data (NUL byte); expected nccl-tests text output")
    ctx = {"collective": hint, "collective_line": 0, "algorithm": None, "protocol": None, "nranks": None,
           "nranks_from": None, "nccl_version": None}
    runs: list[NcclRun] = []
    b: _Builder | None = None
    pending_noise = 0       # noise lines before the first run header, charged to that run
    pending_tuning: list = []   # tuning lines before a run header (warm-up calls), given to that run

    def start(kind, line):
        nonlocal b, pending_noise
        if b is not None and (b.rows or kind in b.markers):
            if not b.rows:
                raise _bad(path, b.first_line, f"run has no data rows before the next run header on line "
                           f"{line} (a crashed run, or interleaved output of several processes?)")
            runs.append(_finish(b, path, nranks))
            b = None
        if b is None:
            b = _Builder(first_line=line, noise=pending_noise, tuning=list(pending_tuning))
            pending_noise = 0
            pending_tuning.clear()
        b.markers.add(kind)

    def set_collective(name, line):
        coll = _canonical(name)
        if coll is None:
            raise _bad(path, line, f"unknown collective {name!r}; nccl-tests binaries: "
                       f"{', '.join(s + '_perf' for s in BINARIES)}")
        if hint is not None and coll != hint:
            raise _bad(path, line, f"the log runs {name} ({coll}) but collective={collective!r} was given "
                       f"(--collective); leave it out or give {coll}")
        if b is not None and b.snapshot is not None and b.snapshot["collective"] not in (None, coll):
            return      # a later run's command line: keep it for the next run
        ctx["collective"], ctx["collective_line"] = coll, line

    for no, raw in enumerate(lines, 1):
        s = _PREFIX.sub("", raw).strip()
        if not s or s.startswith("##"):
            continue
        if s.startswith("#@"):
            for key, val in _ANNOTATION.findall(s):
                if key == "collective":
                    set_collective(val, no)
                elif key == "nranks":
                    ctx["nranks"], ctx["nranks_from"] = _int(val, path, no, "nranks"), f"annotation on line {no}"
                elif key in ("algorithm", "protocol"):
                    ctx[key] = val
                else:
                    raise _bad(path, no, f"unknown annotation {key!r}; choose one of: "
                               "collective, nranks, algorithm, protocol")
            continue
        # settings that may appear on any line, '#' or not
        for key, rx in _ENV.items():
            for m in rx.finditer(s):
                ctx[key] = m.group(1)
        m = _NCCL_VERSION.search(s)
        if m:
            ctx["nccl_version"] = m.group(1)
        if s.startswith("#"):
            body = s[1:].split()
            if (m := _STARTING.match(s)):
                start("starting", no)
                set_collective(m.group(1), no)
            elif (m := _VERSION.match(s)):
                start("version", no)
                b.header["tests_version"] = m.group(1)
                if (v := re.search(r"nccl-library=(\d+)", s)):
                    b.header["nccl_version"] = b.header.get("nccl_version") or v.group(1)
            elif (m := _NTHREAD.match(s)):
                start("nthread", no)
                b.header["n_threads"], b.header["n_gpus"] = int(m.group(1)), int(m.group(2))
                for rx, name in ((r"\bminBytes\s+(\d{1,19})\b", "min_bytes"),
                                 (r"\bmaxBytes\s+(\d{1,19})\b", "max_bytes"),
                                 (r"(?<!warmup )(?<!agg )\biters:\s+(\d{1,19})\b", "iters")):
                    if (v := re.search(rx, m.group(3))):
                        b.header[name] = int(v.group(1))
            elif (m := _RANK.match(s)):
                if b is None or b.rows:
                    start("ranks", no)
                b.ranks[int(m.group(1))] = (m.group(2), m.group(3))
            elif body[:1] == ["size"] and "time" in body:
                start("columns", no)
                b.columns, b.columns_line = _parse_columns(body, path, no), no
            elif body and set(body) <= {"out-of-place", "in-place"}:
                if b is None or b.rows:
                    start("banner", no)
                b.banner = tuple(body)
            elif (m := _AVG.match(s)) and b is not None:
                b.header["avg_busbw"] = _float(m.group(1), path, no, "average bus bandwidth")
            elif (m := _OOB.match(s)) and b is not None:
                b.header["out_of_bounds"] = int(m.group(1))
            elif (m := _BINARY.search(s)):
                set_collective(m.group(1), no)
            continue
        tokens = s.split()
        is_row = bool(re.fullmatch(r"[0-9]+", tokens[0])) and (
            len(tokens) >= 2 and bool(re.fullmatch(r"[0-9]+", tokens[1]))
            or (b is not None and b.columns is not None
                and len(tokens) == len(b.columns[0]) + sum(3 + (c is not None) for c in b.columns[1])))
        if not is_row:
            if (m := _BINARY.search(s)):
                set_collective(m.group(1), no)
                if (n := _command_ranks(s)) is not None:
                    ctx["nranks"], ctx["nranks_from"] = n, f"the command line on line {no}"
            elif (m := _NRANKS.search(s)) and len(m.group(1)) < 10:
                ctx["nranks"], ctx["nranks_from"] = int(m.group(1)), f"'nranks {m.group(1)}' on line {no}"
            if (m := _TUNING.search(s)):
                pending_tuning.append(_tuning(m, no))
                if b is not None:
                    b.tuning.extend(pending_tuning)
                    pending_tuning.clear()
            if _FAILURE.search(s) and b is not None:
                b.notes.append(f"line {no}: {s[:200]}")
            if b is not None:
                b.noise += 1
            else:
                pending_noise += 1
            continue
        if b is None or b.columns is None:
            raise _bad(path, no, "data row before any '#  size  count  type ...' column header")
        if b.snapshot is None:
            b.snapshot = dict(ctx)
        _row(b, tokens, path, no)
    if b is not None and (b.rows or b.columns is not None):
        if not b.rows:
            raise _bad(path, b.columns_line, "column header without data rows after it")
        runs.append(_finish(b, path, nranks))
    if not runs:
        raise _bad(path, len(lines), "no nccl-tests data rows (expected rows such as '8  2  float  sum  -1  "
                   "36.5  0.00  0.00  0 ...' under a '#  size  count  type ...' header)")
    return tuple(runs)


def parse_log(path, *, collective: str | None = None, nranks: int | None = None) -> tuple[NcclRun, ...]:
    """Parse an nccl-tests log file; see `parse_text` for the arguments.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = pathlib.Path(d, "ar.log"); _ = p.write_text(_EXAMPLE.replace("\\n", "\\r\\n"))
    ...     [len(r.points) for r in parse_log(p)]
    [4]
    >>> parse_log("/")
    Traceback (most recent call last):
    ...
    fabricsim.topo.errors.BadInput: /: is a directory; expected an nccl-tests log file
    """
    name = os.fspath(path)
    data = read_input_bytes(name, "an nccl-tests log file")
    if b"\x00" in data:
        raise _bad(name, data.count(b"\n", 0, data.index(b"\x00")) + 1,
                   "binary data (NUL byte); expected nccl-tests text output")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise _bad(name, data.count(b"\n", 0, e.start) + 1,
                   f"not UTF-8 text (byte 0x{data[e.start]:02x}); expected nccl-tests output") from None
    return parse_text(text, name, collective=collective, nranks=nranks)


# A short synthetic log for the examples (invented host and times; the algbw and busbw
# columns follow from them by the nccl-tests definitions for 8 ranks).  Real logs: tests/data/nccl/gb200_*.
_EXAMPLE = """\
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 8 minBytes 1048576 maxBytes 1073741824 step: 1024(factor) warmup iters: 5 iters: 20
#
# Using devices
""" + "".join(f"#  Rank {r:2d} Group  0 Pid   4242 on     node00 device {r:2d} [0x{r:02x}] Example GPU\n"
              for r in range(8)) + """\
node00:4242:4242 [0] NCCL INFO NCCL_ALGO set by environment to Ring
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    100.0   10.49   18.35      0     98.0   10.70   18.72      0
  1073741824     268435456     float     sum      -1   5000.0  214.75  375.81      0   4990.0  215.18  376.56      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 197.36
"""
