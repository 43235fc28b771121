"""Sweep runners beyond the local process pool: a Dask cluster, and resuming from a results file.

Public names
------------
DaskRunner
    ``DaskRunner("tcp://HOST:PORT")`` runs a sweep's tasks on an existing Dask
    distributed scheduler: one small task per scenario (the fabric's name and
    parameters, never a graph; each worker builds the fabric once and caches it),
    results yielded as each completes.  A task on a worker that dies is re-run
    elsewhere by the scheduler; a task that raises is retried ``retries`` times.
ResumableRunner
    ``ResumableRunner(inner, path)`` appends every scenario result to ``path`` as one
    JSON line as it arrives; run again with the same file, it yields the results
    already there and gives ``inner`` only the rest.
sweep_runner
    The runner the CLI builds from ``--workers``, ``--scheduler`` and ``--resume``.

Dask is optional (``pip install 'fabricsim[dask]'``): it is imported only when a
:class:`DaskRunner` connects.

Examples
--------
>>> from fabricsim.collectives.whatif import sweep
>>> runner = sweep_runner(scheduler="tcp://10.0.0.5:8786", results_file="sweep.jsonl")  # doctest: +SKIP
>>> s = sweep("jalapeno-pod", {"racks": 4}, "rail-switch", collective="all-to-all",
...           size_bytes=2**30, group_size=512, algorithm="direct", runner=runner)  # doctest: +SKIP
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from ...topo.errors import BadInput, FabricError, about
from ...topo.inputs import read_records, trim_cut_line

__all__ = ["DaskRunner", "ClusterError", "ResumableRunner", "sweep_runner"]

INSTALL_HINT = "pip install 'fabricsim[dask]'"


class ClusterError(FabricError):
    """The Dask cluster lost a sweep: the scheduler went away, or a task's workers kept
    dying (more than the scheduler's ``allowed-failures``).  One line, naming the address."""


class DaskRunner:
    """Run a sweep's tasks on a Dask distributed scheduler at ``address``.

    Parameters
    ----------
    address : str
        The scheduler, ``tcp://HOST:PORT``.
    timeout_s : float
        Give up connecting after this long: :class:`BadInput` naming the address.
    retries : int
        Times a task that raised is re-run (``client.map(retries=)``).  A task lost
        with its worker is re-run by the scheduler on its own (up to its
        ``distributed.scheduler.allowed-failures``, 3 by default).

    The client connects on the first :meth:`map` (and closes after it), or at
    :meth:`connect` / ``with DaskRunner(...)`` (and closes at :meth:`close` / exit),
    which checks the address before any work starts.
    """

    def __init__(self, address: str, *, timeout_s: float = 5, retries: int = 3):
        if not isinstance(address, str) or not address.strip():
            raise BadInput(f"scheduler address {address!r} must be a string like tcp://HOST:PORT")
        if not (isinstance(timeout_s, (int, float)) and timeout_s > 0):
            raise BadInput(f"timeout_s {timeout_s!r} must be a positive number of seconds")
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            raise BadInput(f"retries {retries!r} must be a non-negative integer")
        self.address = address.strip()
        self.timeout_s = float(timeout_s)
        self.retries = retries
        self._client = None

    def __repr__(self) -> str:
        return f"DaskRunner({self.address!r}, timeout_s={self.timeout_s:g}, retries={self.retries})"

    # -- connection -------------------------------------------------------------------
    def connect(self):
        """Connect (once) and return the :class:`distributed.Client`; BadInput if it cannot."""
        if self._client is not None:
            return self._client
        try:
            from distributed import Client
        except ImportError:
            raise BadInput(f"--scheduler {self.address} needs Dask: {INSTALL_HINT}") from None
        self._check_address()
        try:
            self._client = Client(self.address, timeout=f"{self.timeout_s}s", set_as_default=False)
        except (OSError, TimeoutError, ValueError, TypeError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise BadInput(f"cannot reach the Dask scheduler at {self.address} within {self.timeout_s:g} s "
                           f"({first[:160]})") from None
        return self._client

    def _check_address(self) -> None:
        # a malformed address makes Client fail at once but leave a client that hangs the exit: check first
        from distributed.comm.addressing import parse_address, parse_host_port
        from distributed.comm.registry import get_backend
        try:
            scheme, loc = parse_address(self.address, strict=False)
            get_backend(scheme)
            if scheme in ("tcp", "tls", "ws", "wss"):
                host, port = parse_host_port(loc)
                if not host or not port or not 0 < int(port) < 65536:
                    raise ValueError("needs HOST:PORT")
        except (ValueError, TypeError) as exc:
            raise BadInput(f"bad Dask scheduler address {self.address!r} ({str(exc).splitlines()[0][:120]}); "
                           f"give tcp://HOST:PORT") from None

    def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            try:
                client.close()
            except Exception:   # pragma: no cover - closing a broken connection
                pass

    def __enter__(self):
        self.connect()
        return self

    def __exit__(self, *exc):
        self.close()

    # -- the Runner protocol ------------------------------------------------------------
    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any]) -> Iterator[Any]:
        tasks = list(tasks)
        if not tasks:
            return
        owned = self._client is None
        client = self.connect()
        from concurrent.futures import CancelledError
        from distributed import KilledWorker, as_completed
        from distributed.comm.core import CommClosedError
        futures = client.map(functools.partial(_on_worker, fn), tasks, retries=self.retries, pure=False)
        pending = set(futures)
        try:
            for fut in as_completed(futures, loop=client.loop):
                try:
                    res = fut.result()
                except (CancelledError, KilledWorker, CommClosedError) as exc:
                    why = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
                    raise ClusterError(f"the Dask cluster at {self.address} lost the sweep after "
                                       f"{len(tasks) - len(pending)}/{len(tasks)} task(s): {type(exc).__name__}: "
                                       f"{why} (a results file keeps what finished for a rerun)") from None
                pending.discard(fut)
                fut.release()
                yield res
        finally:
            # an error or an abandoned iteration: drop what has not finished
            if pending:
                try:
                    client.cancel(list(pending))
                except Exception:   # pragma: no cover
                    pass
            if owned:
                self.close()


_MALLOC_TUNED = False


def _on_worker(fn: Callable[[Any], Any], task: Any) -> Any:
    """Worker side of :meth:`DaskRunner.map`: ``fn(task)``, after undoing Dask's malloc setting once.

    A Dask nanny starts its workers with ``MALLOC_TRIM_THRESHOLD_=65536``, which also turns
    off glibc's adaptive mmap threshold: every array above 128 KiB is then a fresh mmap
    and page faults, and a scenario prices ~2x slower than in a plain process (a 64-scenario
    pod sweep: 20 s against 10 s on one core).  Where that variable is set, the
    thresholds are raised once per worker process (mmap above 32 MiB, trim above 64 MiB:
    at most that much free heap is kept).  Not glibc: nothing is changed.
    """
    global _MALLOC_TUNED
    if not _MALLOC_TUNED:
        _MALLOC_TUNED = True
        if os.environ.get("MALLOC_TRIM_THRESHOLD_"):
            try:
                import ctypes
                libc = ctypes.CDLL(None)
                libc.mallopt(-3, 32 << 20)      # M_MMAP_THRESHOLD
                libc.mallopt(-1, 64 << 20)      # M_TRIM_THRESHOLD
            except (OSError, AttributeError):   # pragma: no cover - not glibc
                pass
    return fn(task)


# ---------------------------------------------------------------------------------------
# Resume from a results file
# ---------------------------------------------------------------------------------------
def _task_key(task: Any) -> tuple[int, tuple]:
    return int(task.index), tuple(task.specs)


def _fingerprint(fn: Callable, task: Any, memo: dict | None = None) -> str:
    """What, besides index and specs, determines a task's result: the function and the
    sweep's inputs (fabric, parameters, collective, groups, size, price options)."""
    if dataclasses.is_dataclass(task):
        rest = tuple((f.name, getattr(task, f.name)) for f in dataclasses.fields(task)
                     if f.name not in ("index", "specs"))
    else:
        rest = repr(task)
    if memo is not None and rest in memo:       # a sweep's tasks share everything but index and specs
        return memo[rest]
    text = repr((getattr(fn, "__module__", ""), getattr(fn, "__qualname__", repr(fn)), rest))
    fp = hashlib.sha256(text.encode()).hexdigest()[:16]
    if memo is not None:
        memo[rest] = fp
    return fp


class ResumableRunner:
    """Wrap a runner so results persist to ``path`` (JSON lines) and a rerun skips them.

    Each result is appended as ``{"index", "specs", "sweep", "result"}`` and flushed
    the moment it arrives.  On a run, tasks whose ``(index, specs)`` and sweep
    fingerprint (fabric, parameters, collective, groups, size, price options) match a
    line are not run again: their stored results are yielded first.  Python's JSON
    writes floats by their shortest round-trip text, so a stored result equals the
    computed one exactly (NaN and inf are written as ``NaN`` / ``Infinity``).

    Results that are not plain JSON (the sweep's baseline, a cost report) are not
    stored and always recomputed.  A truncated last line (a killed run) is dropped;
    any other line that is not a result record refuses the file (BadInput).
    A file holding another sweep's results is refused (BadInput) rather than mixed.
    """

    def __init__(self, inner, path: str | os.PathLike):
        self.inner = inner
        if not str(path).strip():
            raise BadInput("results file '' is empty; give a file name, e.g. --resume sweep.jsonl")
        self.path = Path(path)
        try:
            parent_ok, is_dir = self.path.parent.is_dir(), self.path.is_dir()
        except OSError as exc:          # a name too long for the file system
            raise BadInput(f"results file {str(path)[:120]!r}: {exc.strerror or exc}") from None
        if is_dir:
            raise BadInput(f"results file {self.path} is a directory; give a file name")
        if not parent_ok:
            # a typo in the directory should not silently create a new tree of folders
            raise BadInput(f"results file {self.path}: directory {self.path.parent} does not exist; create it first")
        self.reused = 0     # results taken from the file on the last map
        self.computed = 0   # results computed (and stored when JSON) on the last map

    def __repr__(self) -> str:
        return f"ResumableRunner({self.inner!r}, {str(self.path)!r})"

    def close(self) -> None:
        """Close the inner runner (a DaskRunner's client), if it has anything to close."""
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _load(self) -> tuple[dict, set]:
        done: dict[tuple, tuple[str, Any]] = {}
        prints: set[str] = set()
        def record(rec):
            specs = rec["specs"]
            if not isinstance(specs, list) or not all(isinstance(x, str) for x in specs):
                raise TypeError("specs: not a list of failure specs")
            return (int(rec["index"]), tuple(specs)), str(rec["sweep"]), rec["result"]

        for key, fp, res in read_records(self.path, "a sweep's results", record):
            done[key] = (fp, res)
            prints.add(fp)
        return done, prints

    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any]) -> Iterator[Any]:
        tasks = list(tasks)
        self.reused = self.computed = 0
        with about("resume"):       # every refusal here is about the results file, never the sweep's options
            done, prints = self._load()
        todo, cached, key_of = [], [], {}
        memo: dict = {}
        fps = [_fingerprint(fn, t, memo) for t in tasks]
        mine = set(fps)
        if prints and not (prints & mine):
            raise BadInput(f"results file {self.path} holds the results of a different sweep "
                           f"(another fabric, collective, size or options); give a new file", param="resume")
        # ``fn.stored_result_error(result, task)``: why a stored result is not one fn returns for task (or None)
        check = getattr(fn, "stored_result_error", None)
        for t, fp in zip(tasks, fps):
            k = _task_key(t)
            hit = done.get(k)
            if hit is not None and hit[0] == fp:
                why = check(hit[1], t) if check is not None else None
                if why:
                    raise BadInput(f"results file {self.path}: the stored result of task {k[0]} "
                                   f"({', '.join(k[1])[:200]}) {why}; the file was edited or damaged: give a new file", param="resume")
                cached.append(hit[1])
            else:
                todo.append(t)
                key_of[k] = fp
        trim_cut_line(self.path)            # a killed run's partial last record goes before appending
        try:
            fh = open(self.path, "a", encoding="utf-8")
        except OSError as exc:
            raise BadInput(f"cannot write results file {self.path}: {exc.strerror or exc}", param="resume") from None
        with fh:
            for res in cached:
                self.reused += 1
                yield res
            for res in self.inner.map(fn, todo):
                self.computed += 1
                line = self._line(res, key_of)
                if line is not None:
                    fh.write(line + "\n")
                    fh.flush()
                yield res

    @staticmethod
    def _line(res: Any, key_of: dict) -> str | None:
        if not isinstance(res, dict) or "index" not in res or "failed" not in res:
            return None
        key = (int(res["index"]), tuple(res["failed"]))
        fp = key_of.get(key)
        if fp is None:
            return None
        try:
            text = json.dumps(res)
        except (TypeError, ValueError):
            return None
        if not _same(json.loads(text), res):   # not exactly JSON (tuples, numpy ...): do not store
            return None
        return json.dumps({"index": key[0], "specs": list(key[1]), "sweep": fp, "result": res})


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same types all the way down (NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (a != a and b != b)
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


# ---------------------------------------------------------------------------------------
# What the CLI calls
# ---------------------------------------------------------------------------------------
def sweep_runner(workers: int = 1, scheduler: str | None = None, results_file: str | os.PathLike | None = None,
                 *, timeout_s: float = 5, retries: int = 3):
    """The runner for ``sweep --workers N [--scheduler ADDR] [--resume FILE]``.

    With ``scheduler`` a connected :class:`DaskRunner` (a bad address fails here, in
    about ``timeout_s``, with BadInput); otherwise ``LocalRunner(workers)``.  With
    ``results_file`` wrapped in a :class:`ResumableRunner`.  A DaskRunner or ResumableRunner
    has ``close()`` (and works as a context manager); a LocalRunner has nothing to close.

    Parameters
    ----------
    workers : local worker processes (ignored with ``scheduler``).
    scheduler : run the scenarios on an existing Dask distributed scheduler, tcp://HOST:PORT (pip install
        'fabricsim[dask]'); each worker builds the fabric once.
    results_file : append each scenario's result to this file as it arrives; rerun with the same file to
        skip what is already done.
    """
    from .sweeps import LocalRunner
    resumable = ResumableRunner(None, results_file) if results_file is not None else None  # path checked first
    if scheduler:
        runner = DaskRunner(scheduler, timeout_s=timeout_s, retries=retries)
        runner.connect()
    else:
        runner = LocalRunner(workers)
    if resumable is None:
        return runner
    resumable.inner = runner
    return resumable
