"""Fit the cost model's constants to nccl-tests measurements (``fabricsim calibrate``).

`calibrate` takes parsed runs (`~fabricsim.collectives.cost.nccl_tests.parse_log`), groups
them by what the log says it measured -- collective, and the NCCL algorithm and protocol
when an ``NCCL_ALGO`` / ``NCCL_PROTO`` line names one -- and for each group fits
``efficiency`` and ``step_latency_us`` (and ``base_latency_us`` when the engine takes it)
by least squares on the *relative* time error of every point (`scipy.optimize.least_squares`).
The result is a `~fabricsim.collectives.cost.calibration.Calibration` with one section per
fit (``[all-reduce]``, ``[all-reduce.ring]``, ``[all-reduce.ring.simple]``).

How the model is evaluated
--------------------------
Every model time comes from the real engine through one adapter, `_model_time`, which
calls `fabricsim.collectives.price`.  The fit does not call it inside the optimiser: for a
fixed algorithm and protocol the engine's time is ``L0 + B / efficiency + k * step + c * base``
(the max-min rates scale with link capacity, the latencies add), so each size is priced a
few times to read ``L0, B, k, c`` and the optimiser works on that decomposition.  When the
log does not say which algorithm (or protocol) ran, the model is the cheapest candidate per
size, as ``algorithm="auto"`` picks.  Every reported model time is a direct `_model_time`
call with the fitted parameters; where it disagrees with the decomposition (an engine that
is not linear in those terms) the fit says so in its notes.

NCCL names: ``NCCL_ALGO`` Ring -> ring, Tree -> halving-doubling (both log-depth trees of
the same bandwidth term), NVLS -> nvls; a list (``Ring,Tree``) or an exclusion (``^NVLS``)
leaves the choice to the model among those candidates.  ``NCCL_PROTO`` LL / LL128 /
Simple -> ll / ll128 / simple.
"""
from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from ...topo.errors import BadInput
from .calibration import PROTOCOLS, Calibration, calibration_from_dict, dumps_calibration
from .nccl_tests import NcclPoint, NcclRun, parse_log

__all__ = ["FitPoint", "Fit", "CalibrationResult", "calibrate", "calibrate_logs", "model_time", "NCCL_ALGORITHMS",
           "NCCL_ALGORITHMS_SPANNING",
           "NCCL_PROTOCOLS", "fitted_params"]

# NCCL_ALGO value (lower case) -> fabricsim algorithm (NCCL docs, "NCCL_ALGO": Ring, Tree,
# CollnetDirect, CollnetChain, NVLS, NVLSTree, PAT); the ones without a counterpart are refused
NCCL_ALGORITHMS = {"ring": "ring", "tree": "halving-doubling", "nvls": "nvls"}
# ... and where the group spans several NIC/rail domains (a multi-node log), the algorithm NCCL's name means
# there: its Ring runs one ring per channel bound to a NIC, which is fabricsim's rail-rings (NCCL's
# src/graph/rings.cc searches rings through the NICs; found by pricing a 2 x 8 MI325X log forced to Ring: the
# flat ring over 16 ranks was +629% rms off, rail-rings +9%)
NCCL_ALGORITHMS_SPANNING = {"ring": "rail-rings"}
NCCL_PROTOCOLS = {"ll": "ll", "ll128": "ll128", "simple": "simple"}
_ENV_NAME = {"algorithm": "ALGO", "protocol": "PROTO"}
_DECOMP_TOL = 1e-6          # relative gap between decomposition and engine that triggers defect correction
_IDENTIFIABLE = 1e-2        # smallest singular value ratio of the normalised design for a constant to be fitted
_POLISH_GAP = 1e-2          # beyond this gap, finish with least squares on the engine (costly: prices per step)
_POLISH_NFEV = 20
_CORRECTIONS = 8            # at most this many engine evaluations of every point for the correction
# An algorithm switch the log does not name (see `_find_break`): I, chosen on synthetic curves
# (two algorithms priced on the two sides of a size) and on the measured fixtures, none of which trips it
_SIDE_MIN = 3               # distinct sizes on each side of a break
_BREAK_RMS = 0.01           # one fit of every point must miss by at least 1% rms ...
_BREAK_GAIN = 3.0           # ... and a fit per side must cut that rms at least 3-fold


def _price():
    from .. import price        # late: fabricsim.collectives imports this package
    return price


def fitted_params() -> tuple[str, ...]:
    """The calibration parameters a fit can set (most identifiable first)."""
    return ("efficiency", "base_latency_us", "step_latency_us")


def _model_time(G, groups, collective: str, algorithm: str | None, protocol: str | None,
                size_bytes: float, params: Mapping[str, float]) -> float:
    """The engine's time in seconds for one collective call with calibration ``params``.

    The ONE place the fit talks to the engine.  ``algorithm`` None means ``auto``;
    ``protocol`` None the engine's own choice (``auto``); a parameter missing from ``params`` keeps
    the engine's default.
    """
    key = None
    if _MEMO is not None:           # inside calibrate(): a log of many runs repeats its points, price each once
        key = (id(G), tuple(map(tuple, groups)), collective, algorithm, protocol, float(size_bytes),
               tuple(sorted((params or {}).items())))
        if key in _MEMO:
            return _MEMO[key]
    # protocol not in the log: the engine picks, as NCCL did
    r = _price()(G, collective, groups=groups, size_bytes=float(size_bytes), algorithm=algorithm or "auto",
                 protocol=protocol or "auto", calibration=Calibration(flat=dict(params)))
    if key is not None:
        _MEMO[key] = float(r.time_s)
    return float(r.time_s)


_MEMO: dict | None = None       # the engine times of one calibrate() call (keyed by everything they depend on)


@dataclass(frozen=True)
class FitPoint:
    """One measured point against the fitted model (times in us, error of model time vs measured)."""
    size_bytes: int
    measured_time_us: float
    model_time_us: float
    measured_busbw_GBps: float
    model_busbw_GBps: float
    error_pct: float
    path: str
    line: int
    default_time_us: float = math.nan           # the uncalibrated model (engine defaults)
    default_error_pct: float = math.nan

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Fit:
    """The fit of one (collective, algorithm, protocol) group of measurements.

    ``algorithm`` / ``protocol`` are None when the logs do not say (the model then picks,
    as ``auto`` does); ``section`` is the calibration section the ``params`` go to;
    ``default_rms_error_pct`` is the uncalibrated model's error on the same points.
    """
    collective: str
    algorithm: str | None
    protocol: str | None
    section: str
    params: Mapping[str, float]
    rms_error_pct: float
    default_rms_error_pct: float
    points: tuple[FitPoint, ...]
    nranks: tuple[int, ...]
    logs: tuple[str, ...]
    notes: tuple[str, ...] = ()
    candidates: tuple[str, ...] = ()        # the algorithms the log leaves open (all: auto)
    switch: bool = False                    # one side of an algorithm switch (its own algorithm's section)

    @property
    def size_range(self) -> tuple[int, int]:
        """The smallest and largest measured size (bytes)."""
        return min(p.size_bytes for p in self.points), max(p.size_bytes for p in self.points)

    def as_dict(self) -> dict:
        return {"collective": self.collective, "algorithm": self.algorithm, "protocol": self.protocol,
                "section": self.section, "params": dict(self.params), "rms_error_pct": self.rms_error_pct,
                "default_rms_error_pct": self.default_rms_error_pct, "nranks": list(self.nranks),
                "logs": list(self.logs), "notes": list(self.notes)}


@dataclass(frozen=True)
class CalibrationResult:
    """Every fit, the calibration they make, and the header that says where it came from."""
    fits: tuple[Fit, ...]
    calibration: Calibration
    fabric: str
    logs: tuple[str, ...]
    header: str

    def toml(self) -> str:
        """The calibration file; each section header carries its measured size range."""
        ranges = {f"[{f.section}]": f"  # measured {size_text(f.size_range[0])} - {size_text(f.size_range[1])}"
                  for f in self.fits if f.points}
        return "\n".join(line + ranges.get(line, "")
                         for line in dumps_calibration(self.calibration, header=self.header).split("\n"))

    def as_dict(self) -> dict:
        """The ``calibrate --json`` shape: ``fits`` and ``points`` (each point names its fit)."""
        points = []
        for i, f in enumerate(self.fits):
            for p in f.points:
                points.append({"fit": i, "collective": f.collective, "size_bytes": p.size_bytes,
                               "measured_busbw_GBps": p.measured_busbw_GBps,
                               "model_busbw_GBps": p.model_busbw_GBps, "error_pct": p.error_pct,
                               "measured_time_us": p.measured_time_us, "model_time_us": p.model_time_us,
                               "default_error_pct": p.default_error_pct, "path": p.path, "line": p.line})
        return {"fabric": self.fabric, "logs": list(self.logs), "fits": [f.as_dict() for f in self.fits],
                "points": points}


def _candidates(value: str | None, table: Mapping[str, str], allowed: Sequence[str], what: str, where: str,
                spanning: Mapping[str, str] | None = None):
    """NCCL_ALGO / NCCL_PROTO text -> (the one fabricsim name or None, candidate names); ``spanning``: the
    names that mean another algorithm where it applies to the group (NCCL's Ring across nodes)."""
    if value is None:
        return None, tuple(allowed)
    text = value.strip().lower()
    exclude = text.startswith("^")
    names = [t.strip() for t in text.lstrip("^").split(",") if t.strip()]
    span = spanning or {}
    mapped = [span[n] if span.get(n) in allowed else table[n] for n in names if n in table]
    if exclude:
        cands = tuple(a for a in allowed if a not in mapped)
    else:
        unknown = [n for n in names if n not in table]
        if unknown and not mapped:
            raise BadInput(f"{where}: NCCL_{_ENV_NAME[what]}={value} has no fabricsim counterpart; known: "
                           f"{', '.join(sorted(table))}")
        cands = tuple(dict.fromkeys(a for a in mapped if a in allowed))
    if not cands:
        raise BadInput(f"{where}: NCCL_{_ENV_NAME[what]}={value} leaves no {what} fabricsim models for this "
                       f"collective; choose among: {', '.join(allowed)}")
    return (cands[0] if len(cands) == 1 and not exclude else None), cands


@dataclass
class _Series:
    collective: str
    algorithm: str | None
    protocol: str | None
    algos: tuple
    protos: tuple
    items: list = field(default_factory=list)       # (NcclPoint, groups, path)
    nranks: set = field(default_factory=set)
    logs: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    switch: bool = False                              # one side of an algorithm switch
    cache: dict = field(default_factory=dict)         # _decompose answers, shared with the series cut from it
    fixed: dict = field(default_factory=dict)         # constants held at a value (not fitted, not the default)


def _one_group(G, nranks: int, path: str):
    from ..placement import by_size, chip_ranks
    n_chips = len(chip_ranks(G))
    if nranks > n_chips:
        raise BadInput(f"{path}: the log has {nranks} ranks but fabric {G.graph.get('name', '?')!r} has "
                       f"{n_chips} chips; choose a fabric with at least {nranks}")
    return by_size(G, nranks, "packed", count=1)


def _decompose(G, groups, coll, algo, proto, size, names, fixed=None):
    """(L0, coefficient per name) with model time = L0 + sum(coef * x) for x = 1/eff, us, us
    (``fixed`` constants held at their value)."""
    zero = {**(fixed or {}), **{n: (1.0 if n == "efficiency" else 0.0) for n in names}}
    a0 = _model_time(G, groups, coll, algo, proto, size, zero)
    coef = {}
    for n in names:
        probe = dict(zero)
        probe[n] = 0.5 if n == "efficiency" else 1.0
        t = _model_time(G, groups, coll, algo, proto, size, probe)
        coef[n] = t - a0            # efficiency: B (1/0.5 - 1/1 = 1); latencies: seconds per us
    base = a0 - coef.get("efficiency", 0.0)
    return base, coef


def _combos(G, s: _Series, names: tuple[str, ...]):
    """Every (algorithm, protocol) the series leaves open that applies: [(algo, proto, L0, C)]."""
    combos = []
    skipped: dict[str, list[str]] = {}              # why -> the algorithm/protocol pairs it rules out
    for algo in s.algos:
        for proto in s.protos:
            rows = []
            try:
                for p, groups, _ in s.items:
                    key = (algo, proto, p.size_bytes, names, id(groups), tuple(sorted(s.fixed.items())))
                    if key not in s.cache:
                        try:
                            s.cache[key] = _decompose(G, groups, s.collective, algo, proto, p.size_bytes, names,
                                                      s.fixed)
                        except BadInput as exc:
                            s.cache[key] = exc
                    if isinstance(s.cache[key], BadInput):
                        raise s.cache[key]
                    rows.append(s.cache[key])
            except BadInput as exc:
                if len(s.algos) * len(s.protos) == 1:
                    raise
                skipped.setdefault(str(exc), []).append(f"{algo}{'/' + proto if proto else ''}")
                continue
            L0 = np.array([r[0] for r in rows])
            C = np.array([[r[1][n] for n in names] for r in rows])
            combos.append((algo, proto, L0, C))
    if skipped:
        s.notes.append("not applicable here: " + "; ".join(f"{', '.join(pairs)} ({why})"
                                                        for why, pairs in skipped.items()))
    if not combos:
        raise BadInput(f"no {s.collective} algorithm applies to the measured groups")
    return combos


def _fit_series(G, s: _Series, names: tuple[str, ...]):
    from scipy.optimize import least_squares
    measured = np.array([p.time_us * 1e-6 for p, _, _ in s.items])
    combos = _combos(G, s, names)
    # fit only what the points can tell apart: on the design the engine would use at a
    # typical answer (the cheapest candidate per point), a constant whose column adds no
    # direction to the ones before it (one size; base and step latency of a one-step
    # algorithm) keeps the engine default
    x_typ = np.array([2.0 if n == "efficiency" else 1.0 for n in names])
    pick = np.argmin([L0 + C @ x_typ for _, _, L0, C in combos], axis=0)
    design = np.array([combos[c][3][i] for i, c in enumerate(pick)]) / measured[:, None]
    use = []
    for j in range(len(names)):
        cols = design[:, [*use, j]]
        norms = np.linalg.norm(cols, axis=0)
        if norms[-1] == 0:
            continue
        sv = np.linalg.svd(cols / norms, compute_uv=False)
        if len(sv) == cols.shape[1] and sv[-1] / sv[0] > _IDENTIFIABLE:     # fewer points than constants: no
            use.append(j)
    kept = tuple(names[j] for j in use)
    if not kept:
        raise BadInput(f"{', '.join(s.logs)}: the {s.collective} points do not depend on any calibration "
                       f"constant; nothing to fit")
    if len(kept) < len(names):
        dropped = [n for n in names if n not in kept]
        before = list(s.notes)
        keep_default = _fit_series(G, s, kept)
        # a latency the points cannot tell from another (base and step latency of an algorithm
        # whose step count does not change with size) may do better held at 0 than at the engine
        # default, which can exceed the whole measured intercept: the better of the two is kept
        lat = [n for n in dropped if n != "efficiency"]
        if lat:
            alt = dataclasses.replace(s, fixed={**s.fixed, **{n: 0.0 for n in lat}}, notes=before)
            at_zero = _fit_series(G, alt, kept)
            if _rms(at_zero[2] / measured - 1.0) < _rms(keep_default[2] / measured - 1.0) - 1e-9:
                s.notes[:] = alt.notes + [f"not fitted (the points cannot tell them apart): {', '.join(lat)}; held "
                                          f"at 0 (the engine default fits worse)"]
                s.fixed = alt.fixed
                return at_zero
        s.notes.append(f"not fitted (the points cannot tell them apart): {', '.join(dropped)}; they keep the "
                       f"engine default")
        return keep_default
    lo = np.array([1.0 if n == "efficiency" else 0.0 for n in names])    # x = 1/eff >= 1, latencies >= 0

    def model(x):
        return np.min([L0 + C @ x for _, _, L0, C in combos], axis=0)

    def solve(offset, start):
        return least_squares(lambda x: (model(x) + offset) / measured - 1.0, start, bounds=(lo, np.inf),
                             method="trf", x_scale="jac")

    best = None
    for _, _, L0, C in combos:          # each candidate alone is linear: start from each
        x0 = np.maximum(lo, [2.0 if n == "efficiency" else 1.0 for n in names])
        sol = least_squares(lambda x, L0=L0, C=C: (L0 + C @ x) / measured - 1.0, x0, bounds=(lo, np.inf),
                            method="trf", x_scale="jac")
        sol = solve(0.0, sol.x)
        if best is None or sol.cost < best.cost:
            best = sol
    # Defect correction: where the engine is not exactly L0 + B/eff + k*latency (pipelined
    # phases take max(latency, bandwidth) terms), refit with the decomposition shifted by
    # the engine's own times at the last answer, keeping the best answer by engine times.
    x = best.x
    direct = _direct_times(G, s, _params(names, x))
    gap = float(np.max(np.abs(model(x) / direct - 1.0)))
    best_x, best_t = x, direct
    for _ in range(_CORRECTIONS if gap > _DECOMP_TOL else 0):
        x = solve(direct - model(x), x).x
        direct = _direct_times(G, s, _params(names, x))
        if _rms(direct / measured - 1.0) < _rms(best_t / measured - 1.0) - 1e-12:
            best_x, best_t = x, direct
        else:
            break
    how = "defect correction"
    if gap > _POLISH_GAP:
        # far from linear (a pipelined phase switching between its latency and bandwidth
        # terms): least squares on the engine itself, from the best answer so far
        def engine_resid(x):
            return _direct_times(G, s, _params(names, x)) / measured - 1.0
        sol = least_squares(engine_resid, best_x, bounds=(lo, np.inf), method="trf", x_scale="jac",
                            diff_step=1e-4, max_nfev=_POLISH_NFEV)
        t = _direct_times(G, s, _params(names, sol.x))
        if _rms(t / measured - 1.0) < _rms(best_t / measured - 1.0):
            best_x, best_t, how = sol.x, t, "least squares on the engine's own times"
    if gap > _DECOMP_TOL:
        s.notes.append(f"the engine's time differs from L0 + B/efficiency + k*latency by up to {gap * 100:.3g}% "
                       f"(pipelined phases); fitted by {how}")
    _note_extrapolated_latency(s, names, best_x, combos, measured)
    return {**s.fixed, **_params(names, best_x)}, names, best_t


_EXTRAPOLATED = "an intercept of the bandwidth curve rather than a small-message latency"


def _note_extrapolated_latency(s: _Series, names, x, combos, measured) -> None:
    """Say so when the fitted latencies are less than half of even the smallest point's time:
    there they are the intercept of the bandwidth curve, not a small-message latency."""
    lat = [j for j, n in enumerate(names) if n != "efficiency"]
    if not lat:
        return
    sizes = np.array([p.size_bytes for p, _, _ in s.items])
    i = int(np.argmin(sizes))
    c = int(np.argmin([L0[i] + C[i] @ x for _, _, L0, C in combos]))
    share = float(combos[c][3][i, lat] @ x[lat]) / measured[i]
    if share < 0.5:
        fitted = ", ".join(f"{names[j]} = {x[j]:.4g}" for j in lat)
        s.notes.append(f"{fitted}: fitted from {size_text(sizes.min())} - {size_text(sizes.max())} only, where "
                       f"latency is {share * 100:.0f}% of the time at most: {_EXTRAPOLATED}; prices of smaller sizes with "
                       f"this file extrapolate it (log small sizes too, e.g. nccl-tests -b 8)")


def size_text(b: float) -> str:
    """Bytes as the largest binary unit they reach: ``536870912`` -> ``512 MiB``."""
    for unit, k in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if b >= k:
            return f"{b / k:g} {unit}"
    return f"{b:g} B"


def _params(names, x) -> dict[str, float]:
    """Optimiser vector -> constants, to 6 significant digits (what the TOML keeps; 1e-13 us is 0)."""
    out = {}
    for n, v in zip(names, x):
        v = float(1.0 / v if n == "efficiency" else v)
        out[n] = 0.0 if abs(v) < 1e-9 else float(f"{v:.6g}")
    return out


def _direct_times(G, s: _Series, params) -> np.ndarray:
    """The engine's time for every point of ``s`` with ``params`` (seconds; ``s.fixed`` under them)."""
    params = {**s.fixed, **params} if params else params
    algo = s.algorithm if len(s.algos) == 1 else None
    return np.array([_model_time(G, g, s.collective, algo or _best_algo(G, g, s.collective, s.algos, s.protocol,
                                                                          p.size_bytes, params),
                                 s.protocol, p.size_bytes, params) for p, g, _ in s.items])


def _rms(err) -> float:
    return float(math.sqrt(float(np.mean(np.square(err))))) if len(err) else float("nan")


def _quick_rms(combos, idx, measured, lo) -> tuple[float, np.ndarray]:
    """rms relative error of the decomposition's best fit on points ``idx`` (no engine calls)."""
    from scipy.optimize import least_squares
    m = measured[idx]
    x0 = np.maximum(lo, np.where(lo > 0, 2.0, 1.0))
    best = None
    for _, _, L0, C in combos:
        alone = least_squares(lambda x, L0=L0, C=C: (L0[idx] + C[idx] @ x) / m - 1.0, x0, bounds=(lo, np.inf),
                              method="trf", x_scale="jac")
        sol = least_squares(lambda x: np.min([L0[idx] + C[idx] @ x for _, _, L0, C in combos], axis=0) / m - 1.0,
                            alone.x, bounds=(lo, np.inf), method="trf", x_scale="jac") if len(combos) > 1 else alone
        if best is None or sol.cost < best.cost:
            best = sol
    return _rms(best.fun), best.x


@dataclass(frozen=True)
class _Break:
    size_below: int         # the largest size of the lower side
    size_above: int         # the smallest size of the upper side
    below: str              # the algorithm that fits the lower side best
    above: str
    rms_one: float          # relative rms of one fit of every point
    rms_two: float          # relative rms of the fit per side, each side's best algorithm
    rms_same: float         # relative rms of the fit per side, one algorithm on both sides (the best such)
    ties: tuple = ()        # per side: the algorithms that fit it within _TIE of the best


_TIE = 1e-3                 # side fits within 0.1% rms of the best are a tie (the first open algorithm is taken)


def _find_break(G, s: _Series, names) -> _Break | None:
    """An algorithm switch the log does not name, from a break in the curve, or None.

    The rule: sort the distinct sizes s_1 < ... < s_m.  E1 is the rms relative time error
    of one fit of every point (the series' model: the cheapest open algorithm per size, one
    set of constants).  For every split k with at least `_SIDE_MIN` sizes on each side, each
    side is fitted by each open algorithm alone, with its own constants; E2(k) is the rms
    over all points when each side takes its best algorithm, Esame(k) when both sides take
    one algorithm (the best such).  The break is the k of least E2.  It is a break in the
    curve when E1 >= `_BREAK_RMS` and E1 >= `_BREAK_GAIN` x E2 (new constants are needed
    past it), and an algorithm switch when also Esame >= `_BREAK_GAIN` x E2 (new constants
    alone do not explain it: the algorithm changed).  A break that is not a switch (a
    protocol change, or noise) keeps one fit and the notes say so.  Fits run on the engine's
    decomposition (L0 + B/efficiency + k*latency): no engine calls beyond `_combos`.
    """
    sizes = sorted({p.size_bytes for p, _, _ in s.items})
    if s.algorithm is not None or len(s.algos) < 2 or len(sizes) < 2 * _SIDE_MIN:
        return None
    combos = _combos(G, s, names)
    measured = np.array([p.time_us * 1e-6 for p, _, _ in s.items])
    size_of = np.array([p.size_bytes for p, _, _ in s.items])
    lo = np.array([1.0 if n == "efficiency" else 0.0 for n in names])
    rms_one, _ = _quick_rms(combos, np.arange(len(measured)), measured, lo)
    if rms_one < _BREAK_RMS:
        return None
    by_algo: dict[str, list] = {}
    for c in combos:
        by_algo.setdefault(c[0], []).append(c)
    if len(by_algo) < 2:
        return None
    best = None
    total = len(measured)
    for k in range(_SIDE_MIN, len(sizes) - _SIDE_MIN + 1):
        sides = []
        for idx in (np.flatnonzero(size_of < sizes[k]), np.flatnonzero(size_of >= sizes[k])):
            sides.append(({a: _quick_rms(cs, idx, measured, lo)[0] for a, cs in by_algo.items()}, len(idx)))
        pick = [min(errs, key=lambda a: (errs[a] > min(errs.values()) + _TIE, list(by_algo).index(a)))
                for errs, _ in sides]
        two = math.sqrt(sum(n * errs[a] ** 2 for (errs, n), a in zip(sides, pick)) / total)
        same = min(math.sqrt(sum(n * errs[a] ** 2 for errs, n in sides) / total) for a in by_algo)
        if best is None or two < best.rms_two:
            ties = tuple(tuple(a for a in by_algo if errs[a] <= min(errs.values()) + _TIE) for errs, _ in sides)
            best = _Break(sizes[k - 1], sizes[k], pick[0], pick[1], rms_one, two, same, ties)
    if best is None or best.rms_one < _BREAK_GAIN * best.rms_two:
        return None
    if best.rms_same < _BREAK_GAIN * best.rms_two or best.below == best.above:
        s.notes.append(f"a break in the curve between {size_text(best.size_below)} and {size_text(best.size_above)} "
                       f"(one fit misses by {best.rms_one * 100:.2g}% rms, a fit per side by {best.rms_two * 100:.2g}%) "
                       f"but one algorithm with new constants past it explains it as well "
                       f"({best.rms_same * 100:.2g}%): not an algorithm switch (a protocol change?); one fit")
        return None
    return best


def _split(s: _Series, parts: Mapping[str, list], how: str) -> list[_Series]:
    """``s`` cut into one series per algorithm (``parts``: fabricsim algorithm -> items), with the note."""
    out = []
    ranges = {a: (min(p.size_bytes for p, _, _ in it), max(p.size_bytes for p, _, _ in it)) for a, it in parts.items()}
    order = sorted(parts, key=lambda a: ranges[a][0])
    said = ", ".join(f"[{s.collective}.{a}] {size_text(ranges[a][0])} - {size_text(ranges[a][1])}" for a in order)
    for a in order:
        sub = _Series(s.collective, a, s.protocol, (a,), s.protos, items=list(parts[a]), nranks=set(s.nranks),
                      logs=dict.fromkeys(path for _, _, path in parts[a]), notes=list(s.notes), switch=True,
                      cache=s.cache)
        sub.notes.append(f"the points span an algorithm switch ({how}); fitted per algorithm: {said}")
        out.append(sub)
    return out


def _tuning_algorithms(run: NcclRun, pts, where: str) -> dict[int, tuple[str, int]] | None:
    """size -> (fabricsim algorithm, line) from the run's NCCL TUNING lines; None when they say nothing."""
    if not run.tuning:
        return None
    n = run.nranks or 1
    seen: dict[int, dict[str, int]] = {}
    sizes = {p.size_bytes for p in pts}
    for nbytes, algo, _, line in run.tuning:
        # NCCL counts per-rank bytes for all-gather / reduce-scatter, nccl-tests the whole buffer
        for size in (nbytes, nbytes * n):
            if size in sizes:
                seen.setdefault(size, {}).setdefault(algo, line)
                break
    if not seen:
        return None
    out = {}
    for size, algos in seen.items():
        name = max(algos, key=lambda a: sum(1 for b, x, _, _ in run.tuning if x == a and b in (size, size // n)))
        fab = NCCL_ALGORITHMS.get(name.lower())
        if fab is None:
            raise BadInput(f"{where}: line {algos[name]}: NCCL ran {run.collective} of {size_text(size)} with "
                           f"{name}, which fabricsim does not model; it models {', '.join(k.upper() for k in NCCL_ALGORITHMS)}")
        out[size] = (fab, algos[name])
    # a size without a tuning line takes the algorithm of the nearest size that has one
    for size in sizes - set(out):
        near = min(out, key=lambda t: (abs(math.log2(max(t, 1)) - math.log2(max(size, 1))), t))
        out[size] = (out[near][0], out[near][1])
    return out


def _check_series(s: _Series, whole: bool = True) -> None:
    """One line for what no fit can use: one size, bad numbers and, for a whole curve (``whole``; one
    side of a switch may be flat, latency-bound), times all equal or falling with size."""
    where = ", ".join(s.logs)
    for p, _, path in s.items:
        if not (math.isfinite(p.time_us) and p.time_us > 0):
            raise BadInput(f"{path}:{p.line}: time {p.time_us!r} us is not a positive finite number; nothing to fit")
    sizes = sorted({p.size_bytes for p, _, _ in s.items})
    if len(sizes) < 2:
        raise BadInput(f"{where}: every {s.collective} point has the one size {size_text(sizes[0])}: a fit needs two "
                       f"or more sizes (run nccl-tests with -b and -e apart)")

    def typical(size):
        ts = sorted(p.time_us for p, _, _ in s.items if p.size_bytes == size)
        return ts[len(ts) // 2]
    small, big = typical(sizes[0]), typical(sizes[-1])
    if not whole:
        return
    times = {p.time_us for p, _, _ in s.items}
    if len(times) == 1:
        raise BadInput(f"{where}: every {s.collective} point has the same time ({small:g} us) from "
                       f"{size_text(sizes[0])} to {size_text(sizes[-1])}: no size dependence to fit")
    if big < small:
        raise BadInput(f"{where}: the {s.collective} time does not grow with size ({small:g} us at "
                       f"{size_text(sizes[0])}, {big:g} us at {size_text(sizes[-1])}): not a bandwidth curve; nothing "
                       f"to fit")


def calibrate(G, runs: Sequence[NcclRun], *, groups=None) -> CalibrationResult:
    """Fit the model's constants on ``G`` to the measured ``runs``.

    Parameters
    ----------
    G : the fabric the logs were measured on.
    runs : parsed nccl-tests runs (several logs and collectives at once).
    groups : the groups each measurement ran as (all of one size); default one group of
        each run's ``nranks`` chips (one nccl-tests communicator, the other chips idle).

    Returns
    -------
    CalibrationResult
        One `Fit` per (collective, algorithm, protocol) the logs distinguish.

    Raises
    ------
    BadInput
        A run's rank count differs from ``groups``, exceeds the fabric, or is unknown
        without ``groups``; a collective the model has no algorithms for; NCCL names
        without a counterpart; two fits for one calibration section.
    """
    global _MEMO
    outer = _MEMO is None
    if outer:
        _MEMO = {}
    try:
        return _calibrate(G, runs, groups=groups)
    finally:
        if outer:
            _MEMO = None


def _calibrate(G, runs: Sequence[NcclRun], *, groups=None) -> CalibrationResult:
    from ..algorithms import ALGORITHMS
    if not runs:
        raise BadInput("no nccl-tests runs to fit")
    names = fitted_params()
    series: dict[tuple, _Series] = {}
    logs: dict[str, None] = {}
    for run in runs:
        where = f"{run.path}:{run.first_line}"
        if run.collective not in ALGORITHMS:
            raise BadInput(f"{where}: the model has no {run.collective}; it fits "
                           f"{', '.join(ALGORITHMS)}")
        if groups is not None:
            n = len(groups[0])
            if run.nranks is not None and run.nranks != n:
                raise BadInput(f"{where}: the log has {run.nranks} ranks but the groups have {n} chips; "
                               f"give --group-size {run.nranks} (or leave it out)")
            run_groups = groups
        elif run.nranks is None:
            raise BadInput(f"{where}: the log does not say how many ranks ran; give --group-size")
        else:
            run_groups = _one_group(G, run.nranks, where)
        from ..algorithms import algorithms_for, view_of
        applies = algorithms_for(run.collective, run_groups, view_of(G))
        spanning = {k: v for k, v in NCCL_ALGORITHMS_SPANNING.items() if v in applies}
        algo, algos = _candidates(run.algorithm, NCCL_ALGORITHMS, tuple(ALGORITHMS[run.collective]),
                                  "algorithm", where, spanning)
        proto, protos = _candidates(run.protocol, NCCL_PROTOCOLS, PROTOCOLS[:3], "protocol", where)
        pts = run.select(in_place=False) or run.select(in_place=True)
        zero = [p for p in pts if p.size_bytes == 0]
        pts = tuple(p for p in pts if p.size_bytes > 0)
        per_size = _tuning_algorithms(run, pts, where)
        said = list(dict.fromkeys(per_size[k][0] for k in sorted(per_size))) if per_size else []   # by size
        if per_size and len(said) > 1:
            # NCCL says which algorithm ran at each size: one series per algorithm
            edges = []
            ordered = sorted(per_size.items())
            for (s0, (a0, _)), (s1, (a1, l1)) in zip(ordered, ordered[1:]):
                if a0 != a1:
                    edges.append(f"{a0} to {a1} between {size_text(s0)} and {size_text(s1)} (line {l1})")
            how = f"NCCL's TUNING lines in {os.path.basename(run.path)} say {'; '.join(edges)}"
            parts = [(a, [p for p in pts if per_size[p.size_bytes][0] == a], how) for a in said]
        elif per_size:
            parts = [(said[0], list(pts), None)]        # one algorithm, as if NCCL_ALGO named it
        else:
            parts = [(algo, list(pts), None)]
        for a, its, how in parts:
            key = (run.collective, a, proto, (a,) if a else algos, protos, how)
            s = series.setdefault(key, _Series(run.collective, a, proto, (a,) if a else algos, protos,
                                               switch=how is not None))
            if how:
                s.notes.append(f"the points span an algorithm switch ({how}); fitted per algorithm")
            s.items.extend((p, run_groups, run.path) for p in its)
            s.nranks.add(len(run_groups[0]))
            s.logs[run.path] = None
            if zero:
                s.notes.append(f"{len(zero)} point(s) of size 0 not fitted (no data moves)")
        logs[run.path] = None
    todo = []
    for s in series.values():
        if not s.items:
            raise BadInput(f"{', '.join(s.logs)}: no {s.collective} points to fit (every row N/A or failed)")
        _check_series(s, whole=not s.switch)
        brk = _find_break(G, s, names)
        if brk is None:
            todo.append(s)
            continue
        how = (f"found from a break in the curve between {size_text(brk.size_below)} and "
               f"{size_text(brk.size_above)}: one fit of every point misses by {brk.rms_one * 100:.2g}% rms, "
               f"{brk.below} below and {brk.above} above fitted apart by {brk.rms_two * 100:.2g}%, one algorithm "
               f"on both sides by {brk.rms_same * 100:.2g}%")
        for side, tied in zip((brk.below, brk.above), brk.ties):
            if len(tied) > 1:
                how += (f"; {', '.join(tied)} fit the {side} side alike (within {_TIE * 100:g}% rms): {side} taken, "
                        f"NCCL_ALGO or NCCL's TUNING lines would say which ran")
        todo.extend(_split(s, {brk.below: [it for it in s.items if it[0].size_bytes <= brk.size_below],
                               brk.above: [it for it in s.items if it[0].size_bytes >= brk.size_above]}, how))
    fits, sections = [], {}
    for s in todo:
        _check_series(s, whole=not s.switch)
        try:
            params, _, times = _fit_series(G, s, names)
        except (ValueError, np.linalg.LinAlgError, ZeroDivisionError, OverflowError) as exc:
            # scipy on a singular or non-finite problem; a fit driven to zero efficiency (hypothesis: two
            # points at 1 and 4 bytes, 2,126 and 9,357 us) prices nothing
            raise BadInput(f"{', '.join(s.logs)}: the {s.collective} fit is singular ({exc}); nothing to fit") from None
        if not (all(math.isfinite(v) for v in params.values()) and np.all(np.isfinite(times))):
            raise BadInput(f"{', '.join(s.logs)}: the {s.collective} fit is singular (non-finite constants); "
                           f"nothing to fit")
        section = s.collective + (f".{s.algorithm}" if s.algorithm else "") + (
            f".{s.protocol}" if s.algorithm and s.protocol else "")
        if section in sections:
            raise BadInput(f"two fits for calibration section [{section}] ({', '.join(sections[section])} and "
                           f"{', '.join(s.logs)}); give each log its NCCL_ALGO")
        sections[section] = tuple(s.logs)
        defaults = _direct_times(G, s, {})
        pts, err, default_err = [], [], []
        for (p, g, path), t, t_default in zip(s.items, times, defaults):
            meas = p.time_us * 1e-6
            err.append((t / meas - 1.0) * 100.0)
            default_err.append((t_default / meas - 1.0) * 100.0)
            pts.append(FitPoint(size_bytes=p.size_bytes, measured_time_us=p.time_us, model_time_us=float(t) * 1e6,
                                measured_busbw_GBps=p.busbw_GBps, model_busbw_GBps=float(p.busbw_GBps * meas / t),
                                error_pct=float(err[-1]), path=path, line=p.line,
                                default_time_us=float(t_default) * 1e6, default_error_pct=float(default_err[-1])))
        fits.append(Fit(collective=s.collective, algorithm=s.algorithm, protocol=s.protocol, section=section,
                        params=params, rms_error_pct=_rms(err), default_rms_error_pct=_rms(default_err),
                        points=tuple(pts), nranks=tuple(sorted(s.nranks)), logs=tuple(s.logs),
                        notes=tuple(dict.fromkeys(s.notes)), candidates=tuple(s.algos), switch=s.switch))
    cal = calibration_from_dict({}) if not fits else Calibration(sections={f.section: dict(f.params) for f in fits})
    fits = [_check_auto(G, f, cal, groups) if f.switch else f for f in fits]
    fabric = str(G.graph.get("name", "?"))
    header = "\n".join([
        "fabricsim calibrate: model constants fitted to nccl-tests measurements",
        "logs: " + ", ".join(os.path.basename(p) for p in logs),
        f"fabric: {fabric}; group size: " + ", ".join(
            f"{f.section} {'/'.join(map(str, f.nranks))}" for f in fits),
        "fit: least squares on relative time error; " + "; ".join(
            f"[{f.section}] rms {f.rms_error_pct:.2f}% (default model {f.default_rms_error_pct:.1f}%)" for f in fits),
        # what a reader of the file must know before pricing other sizes with it
        *(f"[{f.section}] measured {size_text(min(p.size_bytes for p in f.points))} - "
          f"{size_text(max(p.size_bytes for p in f.points))}" for f in fits if f.points),
        *(f"[{f.section}] {n}" for f in fits for n in f.notes
          if _EXTRAPOLATED in n or n.startswith("the points span") or _AUTO_ELSEWHERE in n),
    ])
    return CalibrationResult(fits=tuple(fits), calibration=cal, fabric=fabric, logs=tuple(logs), header=header)


_AUTO_ELSEWHERE = "algorithm auto prices"


def _check_auto(G, fit: Fit, cal: Calibration, groups) -> Fit:
    """Does ``algorithm=auto`` with the fitted file price each measured size with the algorithm
    the log ran there (so with that algorithm's section)?  Where it does not, the fit says so."""
    import dataclasses
    if groups is None:
        groups = _one_group(G, fit.nranks[0], fit.section)
    other: dict[str, list[int]] = {}
    for p in fit.points:
        r = _price()(G, fit.collective, groups=groups, size_bytes=float(p.size_bytes), algorithm="auto",
                     protocol=fit.protocol or "auto", calibration=cal)
        if r.algorithm != fit.algorithm:
            other.setdefault(r.algorithm, []).append(p.size_bytes)
    if not other:
        note = (f"{_AUTO_ELSEWHERE} every measured size of {size_text(fit.size_range[0])} - "
                f"{size_text(fit.size_range[1])} with {fit.algorithm}, this section's algorithm")
    else:
        said = "; ".join(f"{len(v)} with {a} ({', '.join(size_text(x) for x in sorted(v))})" for a, v in other.items())
        note = (f"{_AUTO_ELSEWHERE} {sum(map(len, other.values()))} of the {len(fit.points)} sizes this section "
                f"was fitted on with another algorithm: {said}; price those with --algorithm {fit.algorithm}")
    return dataclasses.replace(fit, notes=(*fit.notes, note))


def _best_algo(G, groups, collective, algos, protocol, size_bytes, params):
    """With candidates narrowed by the log (``^NVLS``), the cheapest of them; None = auto."""
    from ..algorithms import ALGORITHMS
    if set(algos) == set(ALGORITHMS[collective]):
        return None
    best, best_t = None, math.inf
    for a in algos:
        try:
            t = _model_time(G, groups, collective, a, protocol, size_bytes, params)
        except BadInput:
            continue
        if t < best_t:
            best, best_t = a, t
    return best


def model_time(G, fit: Fit, size_bytes: float, *, groups=None) -> float:
    """The calibrated model's time in seconds for ``fit``'s collective at ``size_bytes``.

    ``groups`` default: one group of the fit's (first) rank count, as `calibrate` used.
    Out-of-sample checks call this at sizes the fit did not see.
    """
    if groups is None:
        groups = _one_group(G, fit.nranks[0], fit.section)
    algo = fit.algorithm or _best_algo(G, groups, fit.collective, fit.candidates, fit.protocol, size_bytes,
                                       fit.params)
    return _model_time(G, groups, fit.collective, algo, fit.protocol, size_bytes, fit.params)


def calibrate_logs(G, paths: Sequence, *, groups=None) -> CalibrationResult:
    """`calibrate` on the runs of nccl-tests log files (`parse_log` each)."""
    runs = [r for p in paths for r in parse_log(p)]
    return calibrate(G, runs, groups=groups)
