"""Mixture-of-experts dispatch/combine traffic: a router's top-k choices as an all-to-all-v.

Model (the README repeats it):

* ``ep`` ranks form the expert-parallel group; ``experts`` routed experts are placed
  on them ``round-robin`` (expert e on rank e mod ep; any expert count) or
  ``contiguous`` (experts e*ep/E .. on rank e // (E/ep); E must be a multiple of ep).
* ``tokens`` is the total number of tokens across the EP group, spread evenly over
  the ranks as sources (rank r holds T // ep tokens, the first T mod ep ranks one more).
* Each token picks ``top_k`` distinct routed experts.  ``skew=uniform`` samples them
  uniformly (a real router's noise: counts vary around the mean); ``zipf:A`` samples
  with expert e (0-based) weighted (e + 1)^-A, so the low-numbered experts are hot;
  ``FILE`` gives one weight per expert (CSV/text or .npy); ``balanced`` is no sample
  but the expectation of uniform routing, every (rank, expert) pair receiving exactly
  tokens_r x top_k / experts copies (fractional; the uniform all-to-all).  Sampling
  without replacement proportional to the weights uses the Gumbel top-k trick with
  ``np.random.default_rng(seed)``.
* ``shared`` experts are replicated on every rank (as DeepSeek-V3/R1 deployments
  replicate their shared expert), so each token's shared copies stay on its own rank.
* One token-expert copy is ``hidden x dtype`` bytes (fp8 1 B, bf16/fp16 2 B, fp32 4 B).
  ``phase=dispatch`` sends tokens to experts (row = source rank); ``combine`` returns
  them (the transpose).
* ``bytes_total`` counts every copy, local ones included; ``bytes_local`` the copies
  whose expert is on the token's own rank (the diagonal, shared copies included);
  ``bytes_network`` the rest.  ``imbalance`` is max / mean over ranks of the bytes
  the ranks' experts receive in dispatch (the experts' load; in combine they send it
  back, so the figure is the same for both phases).
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from ...topo.errors import BadInput

__all__ = ["MoESpec", "MoETraffic", "moe_traffic", "DTYPE_BYTES", "expert_weights"]

# bytes per element of a token's hidden vector
DTYPE_BYTES = {"fp8": 1, "bf16": 2, "fp16": 2, "fp32": 4}
PHASES = ("dispatch", "combine")
PLACEMENTS = ("round-robin", "contiguous")
_REQUIRED = ("experts", "top_k", "tokens", "hidden")
_INTS = ("experts", "top_k", "tokens", "hidden", "shared", "seed")
# Gumbel keys are drawn for this many tokens at a time (tokens x experts floats)
_CHUNK_ELEMENTS = 1 << 22


@dataclass(frozen=True)
class MoESpec:
    """One MoE layer's routing: ``MoESpec.parse("experts=256,top_k=8,tokens=1024,hidden=7168")``."""

    experts: int
    top_k: int
    tokens: int
    hidden: int
    dtype: str = "fp8"
    shared: int = 0
    skew: str = "uniform"
    seed: int = 0
    phase: str = "dispatch"
    placement: str = "round-robin"

    def __post_init__(self):
        for name in _INTS:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise BadInput(f"moe {name}={v!r} must be an integer")
        for name in ("experts", "top_k", "tokens", "hidden"):
            if getattr(self, name) < 1:
                raise BadInput(f"moe {name}={getattr(self, name)} must be >= 1")
        if self.shared < 0:
            raise BadInput(f"moe shared={self.shared} must be >= 0")
        if self.top_k > self.experts:
            raise BadInput(f"moe top_k={self.top_k} exceeds experts={self.experts}: a token picks top_k "
                           f"distinct experts")
        if self.dtype not in DTYPE_BYTES:
            raise BadInput(f"moe dtype={self.dtype!r}; choose one of: {', '.join(DTYPE_BYTES)}")
        if self.phase not in PHASES:
            raise BadInput(f"moe phase={self.phase!r}; choose one of: {', '.join(PHASES)}")
        if self.placement not in PLACEMENTS:
            raise BadInput(f"moe placement={self.placement!r}; choose one of: {', '.join(PLACEMENTS)}")
        _parse_skew(self.skew)

    @classmethod
    def parse(cls, text: str) -> "MoESpec":
        """``key=value`` pairs separated by commas; keys are the field names.

        >>> MoESpec.parse("experts=256,top_k=8,tokens=1024,hidden=7168,dtype=bf16").dtype
        'bf16'
        """
        valid = [f.name for f in fields(cls)]
        kw: dict[str, Any] = {}
        for item in str(text).split(","):
            item = item.strip()
            if not item:
                continue
            if "=" not in item:
                raise BadInput(f"moe spec item {item!r} is not key=value; keys: {', '.join(valid)}")
            key, value = (s.strip() for s in item.split("=", 1))
            if key not in valid:
                from ...topo.errors import close_matches
                raise BadInput(f"unknown moe key {key!r}{close_matches(key, valid)}; valid: {', '.join(valid)}")
            if key in kw:
                raise BadInput(f"moe key {key!r} given twice")
            if key in _INTS:
                try:
                    kw[key] = int(value)
                except ValueError:
                    raise BadInput(f"moe {key}={value!r} must be an integer") from None
            else:
                kw[key] = value
        missing = [k for k in _REQUIRED if k not in kw]
        if missing:
            raise BadInput(f"moe spec misses {', '.join(missing)}; required: {', '.join(_REQUIRED)} "
                           f"(e.g. experts=256,top_k=8,tokens=1024,hidden=7168)")
        return cls(**kw)

    @property
    def copy_bytes(self) -> int:
        """Bytes of one token-expert copy."""
        return self.hidden * DTYPE_BYTES[self.dtype]


@dataclass(frozen=True)
class MoETraffic:
    """A MoE layer's all-to-all-v over ``ep`` ranks (see the module notes)."""

    matrix: np.ndarray         # (ep, ep) bytes, row = source rank of the phase
    bytes_total: float
    bytes_network: float
    bytes_local: float
    imbalance: float
    spec: MoESpec | None = None

    def as_dict(self) -> dict[str, Any]:
        d = {"bytes_total": self.bytes_total, "bytes_network": self.bytes_network,
             "bytes_local": self.bytes_local, "imbalance": self.imbalance, "ep": int(self.matrix.shape[0])}
        if self.spec is not None:
            d["spec"] = {f.name: getattr(self.spec, f.name) for f in fields(self.spec)}
        return d


def _parse_skew(skew: str):
    """('uniform'|'balanced', None) | ('zipf', A) | ('file', path)."""
    s = str(skew)
    if s in ("uniform", "balanced"):
        return s, None
    if s.startswith("zipf:"):
        try:
            a = float(s[5:])
        except ValueError:
            a = float("nan")
        if not (np.isfinite(a) and a > 0):
            raise BadInput(f"moe skew={s!r}: zipf:A needs a finite exponent A > 0 (e.g. zipf:1.2)")
        return "zipf", a
    if s.startswith("zipf"):
        raise BadInput(f"moe skew={s!r}: write zipf:A with an exponent A > 0 (e.g. zipf:1.2)")
    if not Path(s).is_file():
        raise BadInput(f"moe skew={s!r}: not uniform, balanced, zipf:A or a file of per-expert weights")
    return "file", s


def expert_weights(spec: MoESpec) -> np.ndarray | None:
    """Routing weight of each expert (None for uniform/balanced)."""
    kind, arg = _parse_skew(spec.skew)
    if kind in ("uniform", "balanced"):
        return None
    if kind == "zipf":
        return np.arange(1, spec.experts + 1, dtype=np.float64) ** -arg
    w = _read_weights(Path(arg))
    if w.size != spec.experts:
        raise BadInput(f"{arg}: holds {w.size} expert weights; experts={spec.experts} needs one per expert")
    if np.count_nonzero(w) < spec.top_k:
        raise BadInput(f"{arg}: only {np.count_nonzero(w)} experts have a weight > 0; top_k={spec.top_k} "
                       f"needs that many")
    return w


def _read_weights(p: Path) -> np.ndarray:
    if p.suffix.lower() == ".npy":
        try:
            w = np.load(p, allow_pickle=False)
        except (OSError, ValueError, EOFError):
            raise BadInput(f"{p}: not a readable .npy array of expert weights") from None
        if w.dtype.kind not in "iuf":
            raise BadInput(f"{p}: holds {w.dtype} values; expert weights are numbers")
        w = w.astype(np.float64).ravel()
        where = lambda i: f"{p}: entry {i + 1}"     # noqa: E731
    else:
        try:
            text = p.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError:
            raise BadInput(f"{p}: not UTF-8 text; give expert weights as CSV/text or .npy") from None
        except OSError as exc:
            raise BadInput(f"{p}: cannot read ({exc.strerror})") from None
        vals = []
        for lineno, line in enumerate(text.splitlines(), 1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            for i, f in enumerate(s.replace(",", " ").split(), 1):
                try:
                    vals.append(float(f))
                except ValueError:
                    raise BadInput(f"{p}: line {lineno}, field {i}: {f!r} is not a number (an expert weight)") \
                        from None
        w = np.asarray(vals, dtype=np.float64)
        where = lambda i: f"{p}: weight {i + 1}"     # noqa: E731
    if w.size == 0:
        raise BadInput(f"{p}: empty; expected one weight per expert")
    bad = np.flatnonzero(~np.isfinite(w) | (w < 0))
    if bad.size:
        raise BadInput(f"{where(int(bad[0]))} is {w[bad[0]]}; weights must be finite and >= 0")
    return w


def _placement(spec: MoESpec, ep: int) -> np.ndarray:
    """Rank of each expert."""
    e = np.arange(spec.experts)
    if spec.placement == "round-robin":
        return e % ep
    if spec.experts % ep:
        raise BadInput(f"moe placement=contiguous needs experts ({spec.experts}) to be a multiple of ep ({ep}); "
                       f"use placement=round-robin")
    return e // (spec.experts // ep)


def moe_traffic(spec: MoESpec, ep: int) -> MoETraffic:
    """The ``(ep, ep)`` byte matrix of one MoE dispatch (or combine) and its totals.

    Examples
    --------
    >>> t = moe_traffic(MoESpec.parse("experts=256,top_k=8,tokens=1024,hidden=7168,dtype=fp8"), 128)
    >>> t.bytes_total == 1024 * 8 * 7168
    True
    """
    if isinstance(ep, bool) or not isinstance(ep, (int, np.integer)) or ep < 1:
        raise BadInput(f"ep={ep!r} must be a positive number of ranks")
    ep = int(ep)
    home = _placement(spec, ep)
    per_rank = np.full(ep, spec.tokens // ep, dtype=np.int64)
    per_rank[: spec.tokens % ep] += 1
    kind, _ = _parse_skew(spec.skew)
    if kind == "balanced":
        counts = np.outer(per_rank.astype(np.float64), np.full(spec.experts, spec.top_k / spec.experts))
    else:
        counts = _sample_counts(spec, per_rank, expert_weights(spec))
    # copies from each source rank to each destination rank (the experts' homes)
    C = np.zeros((ep, ep))
    np.add.at(C.T, home, counts.T)
    C[np.arange(ep), np.arange(ep)] += per_rank * spec.shared    # shared experts are on every rank
    M = C * spec.copy_bytes
    load = M.sum(axis=0)                   # bytes each rank's experts receive in dispatch
    imbalance = float(load.max() / load.mean())
    if spec.phase == "combine":
        M = M.T.copy()
    M.flags.writeable = False
    local = float(np.trace(M))
    total = float(spec.tokens * (spec.top_k + spec.shared) * spec.copy_bytes)
    return MoETraffic(M, total, float(M.sum()) - local, local, imbalance, spec)


def _sample_counts(spec: MoESpec, per_rank: np.ndarray, w: np.ndarray | None) -> np.ndarray:
    """(ep, experts) token-expert copies: each token picks top_k distinct experts."""
    rng = np.random.default_rng(spec.seed)
    E, K = spec.experts, spec.top_k
    logw = None if w is None else np.log(np.where(w > 0, w, 1.0)) + np.where(w > 0, 0.0, -np.inf)
    counts = np.zeros((len(per_rank), E))
    src = np.repeat(np.arange(len(per_rank)), per_rank)
    chunk = max(1, _CHUNK_ELEMENTS // E)
    for lo in range(0, len(src), chunk):
        s = src[lo:lo + chunk]
        # Gumbel top-k: the k largest of log w + Gumbel noise are a sample of k distinct
        # experts without replacement, with probabilities proportional to w
        keys = rng.gumbel(size=(len(s), E))
        if logw is not None:
            keys += logw
        pick = np.argpartition(-keys, K - 1, axis=1)[:, :K]
        np.add.at(counts, (np.repeat(s, K), pick.ravel()), 1.0)
    return counts
