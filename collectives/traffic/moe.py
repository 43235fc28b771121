"""Mixture-of-experts dispatch/combine traffic: a router's top-k choices as an all-to-all-v.

Model (docs/guide.md repeats it):

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
  without replacement proportional to the weights takes the top_k smallest of
  Exp(1) / weight per token (Efraimidis-Spirakis) from ``np.random.default_rng(seed)``.
* ``shared`` experts are replicated on every rank (as DeepSeek-V3/R1 deployments
  replicate their shared expert), so each token's shared copies stay on its own rank.
* One copy is ``hidden x dtype`` bytes (fp8 1 B, bf16/fp16 2 B, fp32 4 B).
  ``phase=dispatch`` sends tokens to experts (row = source rank); ``combine`` returns
  them (the transpose).
* ``dedup`` says what a copy is.  ``rank`` (the default): one copy per (token,
  destination rank), fanned out to that rank's experts locally, as DeepEP's normal
  kernels do (deepseek-ai/DeepEP: ``get_dispatch_layout`` gives ``is_token_in_rank``
  [tokens, ranks], each rank receives a token once with the ``recv_topk_idx`` of its
  own experts, and combine returns one copy per (token, rank), reduced on the sender).  ``expert``: one copy per (token, expert), a plain
  all-to-all-v of the router's choices.  Under ``balanced`` routing the rank copies are
  the exact expectation: a token's top_k distinct experts are a uniform top_k-subset
  of the E experts, so it reaches rank j (holding n_j experts) with probability
  ``1 - C(E - n_j, top_k) / C(E, top_k)`` (hypergeometric; for E = 256, top_k = 8, 8
  ranks of 32: 0.6618 per rank, 5.295 ranks per token, 8 / 5.295 = 1.511x fewer bytes
  than one copy per expert).  The sampled skews (``uniform``, ``zipf:A``, ``FILE``)
  keep their method: the same draws as ``dedup=expert``, each token then counted once
  per distinct rank among its picks.  A token with ``shared`` experts always has a
  copy on its own rank (its shared experts are there), one copy however many shared
  and local routed experts it has.  ``node``: as DeepEP's internode kernels, one copy per
  (token, destination node) crosses between nodes -- to the rank on the sender's rail
  there (same index in its node) -- and that rank forwards it to each other rank of its
  node the token needs; ranks of the sender's own node get theirs directly.  Nodes are
  ``node_ranks`` consecutive ranks (8).  Under ``balanced`` a token needs node n, holding
  N_n experts, with probability ``1 - C(E - N_n, top_k) / C(E, top_k)``; every rank ends
  with the rank dedup's copies (the same ``imbalance``), and the forwarded copies count in
  ``bytes_total``.
* ``groups=G,topk_groups=g``: DeepSeek-V3's group-limited router.  Experts form G groups of
  consecutive ids; a token picks g groups (uniformly under ``balanced`` / ``uniform``, by
  their summed weights under a skew), then its top_k among their experts.  The balanced
  reach of a set of experts sums over which of its groups are picked (:func:`_miss`).
* ``bytes_total`` counts every copy, local ones included; ``bytes_local`` the copies
  whose destination is the token's own rank (the diagonal, shared copies included);
  ``bytes_network`` the rest.  ``imbalance`` is max / mean over ranks of the bytes
  the ranks receive in dispatch (their experts' load; in combine they send it
  back, so the figure is the same for both phases).
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from math import comb
from pathlib import Path
from typing import Any

import numpy as np

from ...topo.console import ticker
from ...topo.errors import BadInput
from ...topo.inputs import read_input_text

__all__ = ["MoESpec", "MoETraffic", "moe_traffic", "DTYPE_BYTES", "DEDUPS", "expert_weights",
           "rank_reach_probability"]

# bytes per element of a token's hidden vector; the 4-bit block formats carry their scales: NVFP4 one FP8 (E4M3)
# scale per 16 elements = 4.5 bits (NVIDIA, F; DeepEP quantizes dispatch to it on Blackwell, LMSYS GB200 Part II, F),
# MXFP4 one 8-bit (E8M0) scale per 32 = 4.25 bits (OCP Microscaling spec v1.0, F)
DTYPE_BYTES = {"fp8": 1, "bf16": 2, "fp16": 2, "fp32": 4, "nvfp4": 0.5625, "mxfp4": 0.53125}
PHASES = ("dispatch", "combine")
PLACEMENTS = ("round-robin", "contiguous")
# one copy per (token, rank) [DeepEP/pplx-kernels dispatch], per (token, expert) [plain all-to-all-v], or per
# (token, node) across nodes then forwarded inside the node [DeepEP's internode normal kernels]
DEDUPS = ("rank", "expert", "node")
_REQUIRED = ("experts", "top_k", "tokens", "hidden")
_INTS = ("experts", "top_k", "tokens", "hidden", "shared", "seed", "node_ranks", "groups", "topk_groups")
# Ranges refused in one line rather than overflowing or running for hours (no MoE comes close:
# DeepSeek-V3 256 experts, Kimi K2 384, hidden 7,168)
_LIMITS = {"experts": 1 << 20, "tokens": 1 << 40, "hidden": 1 << 30, "shared": 1 << 10, "node_ranks": 1 << 20,
           "groups": 1 << 10}
# sampling draws tokens x experts keys: past this, say so (balanced is the expectation, no draws)
_MAX_DRAWS = 1 << 32
# routing keys are drawn for this many token-expert pairs at a time (float32)
_CHUNK_ELEMENTS = 1 << 22
# a sampled routing says how far it is this often (I: ~40 M draws/s on the test machine, so 2**32 draws take
# minutes)
_SAY_EVERY_S = 5.0


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
    dedup: str = "rank"
    node_ranks: int = 8
    groups: int = 1
    topk_groups: int = 0

    def __post_init__(self):
        for name in _INTS:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise BadInput(f"moe {name}={v!r} must be an integer")
        for name in ("experts", "top_k", "tokens", "hidden", "node_ranks", "groups"):
            if getattr(self, name) < 1:
                raise BadInput(f"moe {name}={getattr(self, name)} must be >= 1")
        if self.shared < 0:
            raise BadInput(f"moe shared={self.shared} must be >= 0")
        if self.seed < 0:
            raise BadInput(f"moe seed={self.seed} must be >= 0 (a numpy Generator seed)")
        for name, cap in _LIMITS.items():
            if getattr(self, name) > cap:
                raise BadInput(f"moe {name}={getattr(self, name)} is past the model's range (at most {cap:,})")
        if self.topk_groups < 0 or self.topk_groups > self.groups:
            raise BadInput(f"moe topk_groups={self.topk_groups} must be in 0..groups={self.groups} (0: every group)")
        if self.experts % self.groups:
            raise BadInput(f"moe groups={self.groups} must divide experts={self.experts} (groups of consecutive "
                           f"experts, as DeepSeek-V3's router forms them)")
        if self.limited and self.top_k > self.selectable:
            raise BadInput(f"moe top_k={self.top_k} exceeds the {self.selectable} experts of topk_groups="
                           f"{self.topk_groups} groups of {self.experts // self.groups}")
        if self.top_k > self.experts:
            raise BadInput(f"moe top_k={self.top_k} exceeds experts={self.experts}: a token picks top_k "
                           f"distinct experts")
        if self.dtype not in DTYPE_BYTES:
            raise BadInput(f"moe dtype={self.dtype!r}; choose one of: {', '.join(DTYPE_BYTES)}")
        if self.phase not in PHASES:
            raise BadInput(f"moe phase={self.phase!r}; choose one of: {', '.join(PHASES)}")
        if self.placement not in PLACEMENTS:
            raise BadInput(f"moe placement={self.placement!r}; choose one of: {', '.join(PLACEMENTS)}")
        if self.dedup not in DEDUPS:
            raise BadInput(f"moe dedup={self.dedup!r}; choose one of: {', '.join(DEDUPS)} (one copy per "
                           f"token and destination rank, per token and expert, or per token and node, forwarded "
                           f"inside it)")
        parse_skew(self.skew)

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
    def limited(self) -> bool:
        """Group-limited routing: a token picks ``topk_groups`` of ``groups`` groups first."""
        return 0 < self.topk_groups < self.groups

    @property
    def selectable(self) -> int:
        """Experts a token may pick from: those of its ``topk_groups`` groups (all without a limit)."""
        return self.topk_groups * (self.experts // self.groups) if self.limited else self.experts

    @property
    def copy_bytes(self) -> int:
        """Bytes of one copy of a token (per expert or per rank, as ``dedup`` says)."""
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


def parse_skew(skew: str):
    """A router skew spec, checked.

    Parameters
    ----------
    skew : str
        ``uniform``, ``balanced``, ``zipf:A`` or a weights file.

    Returns
    -------
    tuple
        ``('uniform'|'balanced', None)``, ``('zipf', A)`` or ``('file', path)``.
    """
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
    kind, arg = parse_skew(spec.skew)
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
        except Exception:             # numpy raises ValueError, OSError, EOFError, SyntaxError ... on junk
            raise BadInput(f"{p}: not a readable .npy array of expert weights") from None
        if not isinstance(w, np.ndarray):
            raise BadInput(f"{p}: an .npz archive, not one .npy array of expert weights")
        if w.dtype.kind not in "iuf":
            raise BadInput(f"{p}: holds {w.dtype} values; expert weights are numbers")
        w = w.astype(np.float64).ravel()
        where = lambda i: f"{p}: entry {i + 1}"     # noqa: E731
    else:
        text = read_input_text(p, "expert weights as CSV/text or .npy")
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


def rank_reach_probability(spec: MoESpec, ep: int) -> np.ndarray:
    """P(a token's top_k experts include at least one on rank j) under uniform routing, per rank j.

    A uniform router's top_k distinct experts are a uniform top_k-subset of the E experts,
    so rank j, holding n_j of them, is missed with the hypergeometric probability
    ``C(E - n_j, top_k) / C(E, top_k) = prod_{i<top_k} (E - n_j - i) / (E - i)``.

    Examples
    --------
    >>> p = rank_reach_probability(MoESpec.parse("experts=256,top_k=8,tokens=8,hidden=1"), 8)
    >>> round(float(p.sum()), 4)       # distinct ranks per token, E=256, top-8, 8 ranks of 32
    5.2947
    """
    home = _placement(spec, ep)
    if spec.limited:            # which experts a rank holds matters, not only how many (their groups)
        return 1.0 - np.array([_miss(spec, np.flatnonzero(home == j)) for j in range(ep)])
    n = np.bincount(home, minlength=ep)
    miss = {m: _avoid(spec.experts, int(m), spec.top_k) for m in np.unique(n)}
    return 1.0 - np.array([miss[m] for m in n])


def _avoid(total: int, n: int, k: int) -> float:
    """``C(total - n, k) / C(total, k)``: a uniform k-subset of ``total`` misses ``n`` given ones.  By its
    product form (factors in [0, 1], no overflow); exactly 0 once ``total - n < k``."""
    if total - n < k:
        return 0.0
    i = np.arange(k, dtype=np.float64)
    return float(np.prod((total - n - i) / (total - i)))


def _miss(spec: MoESpec, members: np.ndarray) -> float:
    """P(a token's top_k experts avoid every expert in ``members``) under uniform (balanced) routing.

    Without a group limit: the hypergeometric ``C(E - n, k) / C(E, k)``.  With one (a token picks a uniform
    ``topk_groups``-subset of the ``groups`` groups of E/groups consecutive experts, then top_k uniform among
    their experts): the members fall in m groups with c_g each; summing over which of those groups are
    picked (A, with |A| = a and c_A members among them; the other picks come from the G - m groups without
    members) gives ``sum C(G - m, gk - a) / C(G, gk) x C(Esel - c_A, k) / C(Esel, k)``, Esel = gk x E/G.
    """
    E, K = spec.experts, spec.top_k
    if not spec.limited:
        return _avoid(E, len(members), K)
    G, gk, size = spec.groups, spec.topk_groups, E // spec.groups
    counts = np.bincount(np.asarray(members) // size, minlength=G)
    c = [int(x) for x in counts if x]
    m = len(c)
    # ways[a][t]: subsets of the member groups with a groups and t members
    ways = [{0: 1}] + [{} for _ in range(m)]
    for cg in c:
        for a in range(m - 1, -1, -1):
            for t, w in ways[a].items():
                ways[a + 1][t + cg] = ways[a + 1].get(t + cg, 0) + w
    Esel = gk * size
    total = 0.0
    for a in range(min(m, gk) + 1):
        if gk - a > G - m:
            continue
        pick = comb(G - m, gk - a) / comb(G, gk)
        for t, w in ways[a].items():
            total += w * pick * _avoid(Esel, t, K)
    return total


def moe_traffic(spec: MoESpec, ep: int, *, progress=None) -> MoETraffic:
    """The ``(ep, ep)`` byte matrix of one MoE dispatch (or combine) and its totals.

    ``progress(msg)``, if given, hears how far a sampled routing is every :data:`_SAY_EVERY_S` seconds
    (up to :data:`_MAX_DRAWS` draws take minutes).

    Examples
    --------
    >>> s = "experts=256,top_k=8,tokens=1024,hidden=7168,dtype=fp8,skew=balanced"
    >>> moe_traffic(MoESpec.parse(s + ",dedup=expert"), 128).bytes_total == 1024 * 8 * 7168
    True
    >>> t = moe_traffic(MoESpec.parse(s), 8)        # dedup=rank: one copy per (token, rank)
    >>> round(1024 * 8 * 7168 / t.bytes_total, 4)
    1.511
    """
    if isinstance(ep, bool) or not isinstance(ep, (int, np.integer)) or ep < 1:
        raise BadInput(f"ep={ep!r} must be a positive number of ranks")
    ep = int(ep)
    home = _placement(spec, ep)
    per_rank = np.full(ep, spec.tokens // ep, dtype=np.int64)
    per_rank[: spec.tokens % ep] += 1
    kind, _ = parse_skew(spec.skew)
    if kind != "balanced" and spec.tokens * spec.experts > _MAX_DRAWS:
        raise BadInput(f"moe tokens={spec.tokens:,} x experts={spec.experts:,} routing draws exceed {_MAX_DRAWS:,} "
                       f"(hours of sampling); use skew=balanced (the expectation) or fewer tokens")
    eye = np.arange(ep)
    arrive = None          # dedup=node: (token, rank) copies each rank ends up with (its experts' load)
    copy_rule = spec.dedup    # (a copy rule, not a failure class named "node")
    if copy_rule == "node":
        R = spec.node_ranks
        if ep > R and ep % R:
            raise BadInput(f"moe dedup=node: ep={ep} ranks do not fill whole nodes of node_ranks={R}; use an ep "
                           f"that is a multiple of {R} (or dedup=rank)")
        if kind == "balanced":
            C, arrive = _node_balanced(spec, per_rank, ep, R)
        else:
            C, arrive = _sample_counts(spec, per_rank, expert_weights(spec), home, ep, by_node=R, progress=progress)
        if spec.shared:
            arrive = arrive + per_rank - np.diag(C)
            C[eye, eye] = per_rank           # every token has a copy at home, for its shared experts
    elif copy_rule == "expert":
        if kind == "balanced":
            counts = np.outer(per_rank.astype(np.float64), np.full(spec.experts, spec.top_k / spec.experts))
        else:
            counts = _sample_counts(spec, per_rank, expert_weights(spec), home, ep, progress=progress)
        # copies from each source rank to each destination rank (the experts' homes)
        C = np.zeros((ep, ep))
        np.add.at(C.T, home, counts.T)
        C[eye, eye] += per_rank * spec.shared    # shared experts are on every rank
    else:
        if kind == "balanced":
            C = np.outer(per_rank.astype(np.float64), rank_reach_probability(spec, ep))
        else:
            C = _sample_counts(spec, per_rank, expert_weights(spec), home, ep, by_rank=True, progress=progress)
        if spec.shared:
            C[eye, eye] = per_rank           # every token has a copy at home, for its shared experts
    M = C * spec.copy_bytes
    # bytes each rank receives in dispatch for its own experts (dedup=node: not the copies it forwards)
    load = M.sum(axis=0) if arrive is None else arrive * spec.copy_bytes
    # equal loads are balanced exactly (a mean of equal floats can miss the value by an ulp)
    imbalance = 1.0 if load.max() == load.min() else float(load.max() / load.mean())
    if spec.phase == "combine":
        M = M.T.copy()
    M.flags.writeable = False
    local = float(np.trace(M))
    # one copy per (token, expert) is a count known in closed form; per (token, rank) it is the matrix's sum
    total = float(spec.tokens * (spec.top_k + spec.shared) * spec.copy_bytes) if copy_rule == "expert" \
        else float(M.sum())
    return MoETraffic(M, total, float(M.sum()) - local, local, imbalance, spec)


def _node_balanced(spec: MoESpec, per_rank: np.ndarray, ep: int, R: int) -> tuple[np.ndarray, np.ndarray]:
    """``dedup=node`` under balanced routing: ``(ep, ep)`` copies and each rank's arrivals.

    Rank ``s`` (node ``a``, local index ``i``) sends a token to a rank of its own node directly, once per
    rank it needs (probability ``P_rank``); to another node ``n`` once, to its relay ``n R + i`` (the rank
    on the same rail), with the probability the token needs node ``n`` at all -- the hypergeometric miss
    of the node's experts, as :func:`rank_reach_probability` for a rank; the relay forwards it to each
    other rank of ``n`` the token needs (``P_rank``).  Arrivals are the rank dedup's.
    """
    p_rank = rank_reach_probability(spec, ep)
    node = np.arange(ep) // R
    local = np.arange(ep) % R
    home_node = _placement(spec, ep) // R
    p_node = np.array([1.0 - _miss(spec, np.flatnonzero(home_node == n)) for n in range(ep // R if ep > R else 1)])
    T = per_rank.astype(np.float64)
    same = node[:, None] == node[None, :]
    C = np.where(same, np.outer(T, p_rank), 0.0)
    rail = (local[:, None] == local[None, :]) & ~same            # s -> its relay on every other node
    C += np.where(rail, np.outer(T, p_node[node]), 0.0)
    # what each relay receives from other nodes, forwarded to the other ranks of its node that are needed
    inbound = np.where(rail, T[:, None], 0.0).sum(axis=0)
    fwd = np.where(same, np.outer(inbound, p_rank), 0.0)
    fwd[np.arange(ep), np.arange(ep)] = 0.0
    return C + fwd, T.sum() * p_rank


def _sample_counts(spec: MoESpec, per_rank: np.ndarray, w: np.ndarray | None, home: np.ndarray, ep: int,
                   by_rank: bool = False, progress=None, by_node: int = 0):
    """Copies from sampled routing: each token picks top_k distinct experts.

    ``(ep, experts)`` token-expert copies, or with ``by_rank`` ``(ep, ep)`` token-rank
    copies (a token counted once per distinct rank among its picks).  Both count the
    same draws, so ``dedup=rank`` and ``dedup=expert`` describe the same routing.  With
    ``by_node=R`` (nodes of R consecutive ranks): ``((ep, ep) copies, (ep,) arrivals)`` of
    ``dedup=node`` (see :func:`_node_balanced`), from the same draws.
    """
    rng = np.random.default_rng(spec.seed)
    E, K = spec.experts, spec.top_k
    width = ep if (by_rank or by_node) else E
    counts = np.zeros(len(per_rank) * width)
    arrive = np.zeros(ep)
    src = np.repeat(np.arange(len(per_rank)), per_rank)
    chunk = max(1, _CHUNK_ELEMENTS // E)
    inv_w = None if w is None else np.where(w > 0, 1.0 / np.where(w > 0, w, 1.0), np.inf).astype(np.float32)
    gw_inv = None
    if spec.limited and w is not None:
        gw = w.reshape(spec.groups, -1).sum(axis=1)
        gw_inv = np.where(gw > 0, 1.0 / np.where(gw > 0, gw, 1.0), np.inf).astype(np.float32)
    tick = ticker(progress, _SAY_EVERY_S)
    for lo in range(0, len(src), chunk):
        tick(lo, len(src),
             lambda: f"moe: routed {lo:,} of {len(src):,} tokens ({lo * E:,} of {len(src) * E:,} draws)")
        s = src[lo:lo + chunk]
        # the k smallest of Exp(1) / w are a sample of k distinct experts without
        # replacement with probabilities proportional to w (Efraimidis-Spirakis; the
        # Gumbel top-k trick in other clothes); uniform weights need no division
        keys = rng.standard_exponential(size=(len(s), E), dtype=np.float32)
        if inv_w is not None:
            keys *= inv_w
        if spec.limited:   # group-limited: topk_groups groups first (by the same rule, their weights summed)
            G, size = spec.groups, E // spec.groups
            gkeys = rng.standard_exponential(size=(len(s), G), dtype=np.float32)
            if gw_inv is not None:
                gkeys *= gw_inv
            chosen = np.argpartition(gkeys, spec.topk_groups - 1, axis=1)[:, :spec.topk_groups]
            keep = np.zeros((len(s), G), dtype=bool)
            np.put_along_axis(keep, chosen, True, axis=1)
            keys[~np.repeat(keep, size, axis=1)] = np.inf
        pick = np.argpartition(keys, K - 1, axis=1)[:, :K] if K < E else np.broadcast_to(np.arange(E), (len(s), E))
        if by_rank or by_node:
            # each token once per distinct destination rank among its picks
            r = np.sort(home[pick], axis=1)
            first = np.ones(r.shape, dtype=bool)
            first[:, 1:] = r[:, 1:] != r[:, :-1]
        if by_node:
            R = by_node
            sr = np.broadcast_to(s[:, None], r.shape)
            nd, home_node = r // R, sr // R
            relay = nd * R + sr % R                      # the rank on the source's rail in the target node
            direct = first & (nd == home_node)
            fwd = first & (nd != home_node) & (relay != r)
            first_node = np.ones(r.shape, dtype=bool)      # ranks are sorted, so a node's ranks are adjacent
            first_node[:, 1:] = nd[:, 1:] != nd[:, :-1]
            cross = first_node & (nd != home_node)
            cells = np.concatenate([(sr * ep + r)[direct], (relay * ep + r)[fwd], (sr * ep + relay)[cross]])
            arrive += np.bincount(r[first], minlength=ep)
        elif by_rank:
            cells = (s[:, None] * ep + r)[first]
        else:
            cells = (s[:, None] * E + pick).ravel()
        counts += np.bincount(cells, minlength=counts.size)
    if by_node:
        return counts.reshape(len(per_rank), width), arrive
    return counts.reshape(len(per_rank), width)
