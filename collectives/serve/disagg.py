"""Disaggregated prefill / decode for ``fabricsim serve`` (``disaggregate={"prefill": P, "decode": D}``).

Pools.  Given as chip counts, the prefill pool is the fabric's first ``P`` chips in rank order (ranks
``0 .. P-1``), the decode pool the next ``D`` (ranks ``P .. P+D-1``); ``P + D`` must not exceed the
fabric's chips.  Given as named chips (:func:`parse_disaggregate`: rank ranges ``a-b``, node-id globs
such as ``r01/*``, or lists of ranks / node ids), each pool is those chips, in rank order, and
every price below runs on them: pool rank ``i`` is the pool's ``i``-th chip.
Each pool runs one mesh that covers it exactly: a ``tp x ep`` candidate (:func:`.sweep.candidate_meshes`)
whose chips divide the pool, with ``dp`` replicas filling the rest (:func:`pool_meshes`).  Each
pool's collectives are priced on its own chips (the decode pool's through a
:class:`~.network.NetworkPricer` whose ranks start at ``P``).

* **Prefill mesh**: per point, of the pool's meshes whose chips hold a prompt's KV cache per TP
  group beside the weights (or the one ``prefill_mesh`` names), the one of least e2e (the most
  requests per second at that concurrency; ties: the least TTFT), searched best-first with a free
  transfer as the bound.
* **Prefill step** ``t_pre``: one ISL-token prompt per prefill TP group, ``g_p`` groups at once
  (:func:`.model.step_terms`, ``prefill``), as the aggregated sweep prices it.
* **KV transfer** ``t_kv``: each finished prompt's KV cache, ``kv_bytes_per_sequence(ISL)``
  (:mod:`.arch`: per token per layer GQA ``2 x kv_heads x head_dim``, MLA ``kv_lora + rope``
  elements at the model's KV precision, sliding layers capped at the window), moves from its
  prefill TP group to decode TP group ``k mod g_d`` (prompt ``k`` of a round).  A TP rank holds
  KV shard ``rank // (tp / s)`` of ``s = kv_shard(tp)`` (GQA: by KV head; MLA: one, every rank
  a full copy); a decode rank needs its shard, sourced from the prefill ranks holding the bytes
  it overlaps, split evenly over their replicas (:func:`kv_traffic`).  One round's transfer (all
  ``g_p`` prompts at once) is a direct all-to-all-v on ranks ``0 .. P+D-1`` priced by the flow
  solver (:func:`~fabricsim.collectives.price`) with the fabric family's model (protocol ``auto``:
  NCCL's point-to-point form stands in for the KV connector's RDMA writes, I) unless the
  ``protocol`` key names another.
* **Sharing links with decode**: the transfer is priced in one max-min solve
  (:func:`~fabricsim.collectives.jobs.mix`) beside one decode layer's collectives (the layer kind
  most of the model's layers are), both started at once; ``kv_transfer_s`` is its finish there,
  ``kv_transfer_alone_s`` its price alone.  NOT in that solve: the decode layers after the first
  (a transfer longer than one layer's collectives meets the later layers' traffic too; their
  compute gaps leave links idle most of a step, and the charged contention is at most one layer's
  worth); the decode step keeps its own price (its slowdown beside the transfer is reported as
  ``decode_layer_slowdown``, not charged).  The decode layer's collectives in that solve use the
  family model, not the serve library's kernels.
* **Throughput** (closed loop: ``C`` users, each sends its next request when the last finishes,
  as InferenceX's concurrency runs): the decode pool holds the ``C`` sequences in one batch (each
  decode step ``t_dec``, no interleaved prefills; ``C`` spread over the pool's TP (and EP) groups, each
  step priced at the busiest group's share on every group, ``ceil(C / groups) x groups`` sequences),
  a request's no-wait time is
  ``R0 = t_pre + t_kv + (OSL / a) x t_dec``; the prefill pool starts a round every
  ``max(t_pre, t_kv)`` (a round's transfer overlaps the next round's prefill), so it serves at most
  ``g_p / max(t_pre, t_kv)`` prompts/s.  Requests complete at ``X = min(C / R0, that capacity)``
  (the asymptotic bound of a closed queueing network, deterministic service: no variance term),
  ``e2e = C / X``, the wait ``queue_s = e2e - R0`` is spent before prefill, so
  ``TTFT = t_pre + t_kv + queue_s`` and ``TPOT = t_dec / a``; tokens/s = ``X x (ISL + OSL)``,
  i.e. min(prefill pool's prompt rate x (ISL + OSL), decode pool's ``C x (ISL + OSL) / R0``).
  Per chip, per kW and $ per million tokens count both pools' ``P + D`` chips.
* The bound is the decode step's resource when the decode side sets ``X``; otherwise
  ``prefill-<resource>`` (``t_pre >= t_kv``) or ``kv-transfer``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...topo.errors import BadInput
from ..jobs.mix import Job, mix
from ..jobs.step import layer_jobs
from ..price import price
from .arch import Arch
from .model import kv_capacity
from .network import NetworkPricer

__all__ = ["Pools", "DisaggTerms", "parse_disaggregate", "pool_meshes", "kv_traffic", "KV_PROTOCOLS"]

KV_PROTOCOLS = ("auto", "ideal", "simple", "ll", "ll128")


@dataclass(frozen=True)
class Pools:
    """The two pools: chip counts, and the chips' ranks where they were named (None: prefill on ranks
    ``0 .. P-1``, decode on ``P .. P+D-1``)."""
    prefill: int
    decode: int
    protocol: str = "auto"     # the KV transfer's price protocol (``price``'s)
    prefill_mesh: str | None = None   # the prefill pool's mesh (None: searched per point)
    prefill_ranks: tuple[int, ...] | None = None
    decode_ranks: tuple[int, ...] | None = None

    @property
    def prefill_at(self) -> tuple[int, ...]:
        """The prefill pool's chip ranks, pool rank ``i`` first at ``i``."""
        return self.prefill_ranks or tuple(range(self.prefill))

    @property
    def decode_at(self) -> tuple[int, ...]:
        """The decode pool's chip ranks."""
        return self.decode_ranks or tuple(range(self.prefill, self.prefill + self.decode))

    def as_dict(self) -> dict[str, Any]:
        named = {} if self.prefill_ranks is None and self.decode_ranks is None else {
            "prefill_ranks": list(self.prefill_at), "decode_ranks": list(self.decode_at)}
        return {"prefill": self.prefill, "decode": self.decode, "protocol": self.protocol,
                "prefill_mesh": self.prefill_mesh} | named


def _chip_set(key: str, v, chips: int, G) -> tuple[int, ...] | int:
    """A pool's chips: a count, or named (``a-b`` rank ranges and node-id globs joined by ``+``, or a list
    of ranks / node ids) -> their ranks in rank order."""
    import fnmatch
    if isinstance(v, str) and v.strip().isdigit():
        return int(v)
    if isinstance(v, bool) or (not isinstance(v, (int, str, list, tuple))):
        raise BadInput(f"disaggregate {key}={v!r}: give a chip count, rank ranges (0-63), node-id globs "
                       f"(r01/*) or a list of ranks or node ids", param="disaggregate")
    if isinstance(v, int):
        return v
    if G is None:
        raise BadInput(f"disaggregate {key}={v!r}: named chips need the fabric", param="disaggregate")
    from ...topo.contract import CHIP, KIND, RANK
    rank_of = {str(n): int(d[RANK]) for n, d in G.nodes(data=True) if d.get(KIND) == CHIP}
    names = sorted(rank_of, key=rank_of.get)
    items = [p.strip() for p in v.split("+")] if isinstance(v, str) else list(v)
    ranks: set[int] = set()
    for it in items:
        if isinstance(it, bool):
            it = repr(it)
        if isinstance(it, int):
            if not 0 <= it < chips:
                raise BadInput(f"disaggregate {key}: rank {it} is not a chip rank (0 .. {chips - 1})",
                               param="disaggregate")
            ranks.add(it)
            continue
        a, sep, b = str(it).partition("-")
        if sep and a.strip().isdigit() and b.strip().isdigit():
            lo, hi = int(a), int(b)
            if not 0 <= lo <= hi < chips:
                raise BadInput(f"disaggregate {key}={it!r}: a rank range within 0 .. {chips - 1}, low first",
                               param="disaggregate")
            ranks.update(range(lo, hi + 1))
            continue
        hit = [r for n, r in rank_of.items() if fnmatch.fnmatchcase(n, str(it))]
        if not hit:
            raise BadInput(f"disaggregate {key}: {str(it)[:80]!r} names no chip (chips are named like "
                           f"{str(names[0])!r})", param="disaggregate")
        ranks.update(hit)
    return tuple(sorted(ranks))


def parse_disaggregate(spec: str | dict | Pools, chips: int, G=None) -> Pools:
    """``"prefill=P,decode=D"`` or ``{"prefill": P, "decode": D[, "protocol": .., "prefill_mesh": "tp=..,dp=.."]}``,
    checked against the fabric's chips (``protocol``: the KV transfer's, :data:`KV_PROTOCOLS`;
    ``prefill_mesh``: the prefill pool's mesh, its chips the pool's, instead of a search per point).

    A pool is a chip count or named chips on the fabric ``G``: rank ranges and node-id globs joined by
    ``+`` (``"prefill=0-63,decode=r01/*"``, ``"decode=r02/*+r03/*"``) or, in a dict, a list of ranks or
    node ids; the two pools may not share a chip.

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> p = parse_disaggregate("prefill=r01/*,decode=0-63", 256, build("jalapeno-pod", racks=2))
    >>> p.prefill, p.decode, p.prefill_at[:2], p.decode_at[-1]
    (128, 64, (128, 129), 63)
    """
    if isinstance(spec, Pools):
        d = {k: v for k, v in spec.as_dict().items() if not k.endswith("_ranks")}
        if spec.prefill_ranks is not None or spec.decode_ranks is not None:
            d["prefill"], d["decode"] = list(spec.prefill_at), list(spec.decode_at)
    elif isinstance(spec, str):
        d = {}
        for part in spec.split(","):
            k, sep, v = part.partition("=")
            if not sep or k.strip() not in ("prefill", "decode"):
                raise BadInput(f"--disaggregate {spec!r}: write prefill=P,decode=D (chip counts, rank ranges 0-63 "
                               f"or node-id globs r01/*)", param="disaggregate")
            d[k.strip()] = v.strip()
    elif isinstance(spec, dict):
        d = dict(spec)
    else:
        raise BadInput(f"disaggregate {spec!r}: give prefill=P,decode=D or a dict with those keys",
                       param="disaggregate")
    extra = sorted(set(d) - {"prefill", "decode", "protocol", "prefill_mesh"})
    if extra or "prefill" not in d or "decode" not in d:
        raise BadInput(f"disaggregate {spec!r}: needs the keys prefill and decode (optionally protocol, "
                       f"prefill_mesh)", param="disaggregate")
    named = {}
    for k in ("prefill", "decode"):
        v = _chip_set(k, d[k], chips, G)
        if isinstance(v, tuple):
            named[k], v = v, len(v)
        d[k] = v
        if v < 1:
            raise BadInput(f"disaggregate {k}={v!r} must be a positive chip count", param="disaggregate")
    protocol = d.get("protocol", "auto")
    if protocol not in KV_PROTOCOLS:
        raise BadInput(f"disaggregate protocol {protocol!r}; choose one of: {', '.join(KV_PROTOCOLS)}",
                       param="disaggregate")
    if named:      # a pool given by count takes the first free chips in rank order
        taken = set(named.get("prefill", ())) | set(named.get("decode", ()))
        for k in ("prefill", "decode"):
            if k not in named:
                free = [r for r in range(chips) if r not in taken][:d[k]]
                if len(free) < d[k]:
                    raise BadInput(f"disaggregate {k}={d[k]:,}: only {len(free):,} chips are left beside the named "
                                   f"pool", param="disaggregate")
                named[k] = tuple(free)
                taken |= set(free)
        both = set(named["prefill"]) & set(named["decode"])
        if both:
            raise BadInput(f"disaggregate: the pools share {len(both):,} chip(s), e.g. rank {min(both)}",
                           param="disaggregate")
    if d["prefill"] + d["decode"] > chips:
        raise BadInput(f"disaggregate prefill={d['prefill']:,},decode={d['decode']:,} needs "
                       f"{d['prefill'] + d['decode']:,} chips; the fabric has {chips:,}", param="disaggregate")
    pm = d.get("prefill_mesh")
    if pm is not None:
        from ..placement import parse_mesh
        pmd = parse_mesh(pm) if isinstance(pm, str) else dict(pm)
        if math.prod(pmd.values()) != d["prefill"]:
            raise BadInput(f"disaggregate prefill_mesh {pm!r} covers {math.prod(pmd.values()):,} chips; the prefill "
                           f"pool has {d['prefill']:,}", param="disaggregate")
        pm = ",".join(f"{k}={v}" for k, v in pmd.items())
    return Pools(d["prefill"], d["decode"], protocol, pm, named.get("prefill"), named.get("decode"))


def pool_meshes(candidates: list[dict[str, int]], chips: int) -> list[dict[str, int]]:
    """The candidates whose chips divide ``chips``, with ``dp`` replicas filling the pool."""
    out = []
    for m in candidates:
        c = math.prod(m.values())
        if chips % c:
            continue
        m2 = {k: v for k, v in m.items() if k != "dp"}
        if chips // math.prod(m2.values()) > 1:
            m2["dp"] = chips // math.prod(m2.values())
        out.append(m2)
    return list({tuple(m.items()): m for m in out}.values())


def _shards(arch: Arch, tp: int) -> tuple[int, int]:
    """(shards, replicas per shard) of a layer's KV cache over a TP group."""
    s = arch.kv_shard(tp)
    return s, max(1, tp // s)


def kv_traffic(arch: Arch, isl: int, prefill_mesh: dict[str, int], decode_mesh: dict[str, int]) -> np.ndarray:
    """Bytes rank a sends rank b in one round (every prefill TP group's prompt at once) on ranks
    ``0 .. P+D-1`` (prefill first); see the module notes for the shard layout."""
    P, D = math.prod(prefill_mesh.values()), math.prod(decode_mesh.values())
    tp_p, tp_d = prefill_mesh.get("tp", 1), decode_mesh.get("tp", 1)
    g_p, g_d = P // tp_p, D // tp_d
    kv = arch.kv_bytes_per_sequence(isl)
    s_p, r_p = _shards(arch, tp_p)
    s_d, r_d = _shards(arch, tp_d)
    share = np.zeros((tp_p, tp_d))
    for a in range(tp_p):
        i = a // r_p
        for b in range(tp_d):
            j = b // r_d
            over = min((i + 1) / s_p, (j + 1) / s_d) - max(i / s_p, j / s_d)
            share[a, b] = kv * max(0.0, over) / r_p
    M = np.zeros((P + D, P + D))
    for k in range(g_p):
        j = k % g_d
        M[k * tp_p:(k + 1) * tp_p, P + j * tp_d:P + (j + 1) * tp_d] += share
    return M


@dataclass(frozen=True)
class DisaggTerms:
    """Every term of a disaggregated point (see the module notes); times in seconds."""
    prefill_chips: int
    decode_chips: int
    prefill_mesh: str
    prefill_groups: int           # prompts per prefill step (one per prefill TP group)
    prefill_step_s: float
    kv_bytes_per_prompt: float
    kv_bytes_per_round: float     # every prompt of a prefill step, as delivered (MLA: once per decode TP rank)
    kv_transfer_s: float          # one round's transfer beside one decode layer's collectives
    kv_transfer_alone_s: float
    kv_algorithm: str
    decode_layer_slowdown: float  # that decode layer's collectives beside the transfer / alone (not charged)
    decode_step_s: float
    decode_batch: int             # sequences the decode step is priced at (C rounded up to the pool's groups)
    prompt_capacity_per_s: float  # g_p / max(t_pre, t_kv)
    requests_per_s: float
    decode_requests_per_s: float  # C / R0: what the decode side alone would sustain
    queue_s: float
    bound: str                    # decode | prefill | kv-transfer
    named: tuple | None = None    # (prefill ranks, decode ranks) where the pools were given as named chips

    def as_dict(self) -> dict[str, Any]:
        return {"prefill_chips": self.prefill_chips, "decode_chips": self.decode_chips,
                "prefill_mesh": self.prefill_mesh, "prefill_groups": self.prefill_groups,
                "prefill_step_ms": self.prefill_step_s * 1e3, "kv_bytes_per_prompt": self.kv_bytes_per_prompt,
                "kv_bytes_per_round": self.kv_bytes_per_round, "kv_transfer_ms": self.kv_transfer_s * 1e3,
                "kv_transfer_alone_ms": self.kv_transfer_alone_s * 1e3, "kv_algorithm": self.kv_algorithm,
                "decode_layer_slowdown": self.decode_layer_slowdown, "decode_step_ms": self.decode_step_s * 1e3,
                "decode_batch": self.decode_batch,
                "prompt_capacity_per_s": self.prompt_capacity_per_s, "requests_per_s": self.requests_per_s,
                "decode_requests_per_s": self.decode_requests_per_s, "queue_ms": self.queue_s * 1e3,
                "bound": self.bound} | ({} if self.named is None else {"prefill_ranks": list(self.named[0]),
                                                                      "decode_ranks": list(self.named[1])})


class KVPricer:
    """Prices one round's KV transfer alone and beside a decode layer's collectives, cached by meshes and tokens."""

    def __init__(self, G, arch: Arch, pools: Pools, isl: int):
        self.G, self.arch, self.pools, self.isl = G, arch, pools, isl
        self._cache: dict = {}
        self._alone: dict = {}
        self._solo: dict = {}
        self.solves = 0

    def price(self, prefill_mesh: dict[str, int], decode_mesh: dict[str, int], tokens: int,
              ) -> tuple[float, float, str, float, float]:
        """(shared_s, alone_s, algorithm, round bytes, decode layer slowdown) of one round's transfer."""
        key = (tuple(prefill_mesh.items()), tuple(decode_mesh.items()), int(tokens))
        if key in self._cache:
            return self._cache[key]
        M = kv_traffic(self.arch, self.isl, prefill_mesh, decode_mesh)
        at = self.pools.decode_at
        group = (self.pools.prefill_at + at,)
        kw = {"protocol": self.pools.protocol}
        akey = key[:2]                   # the transfer alone does not depend on the decode batch
        if akey not in self._alone:
            self._alone[akey] = price(self.G, "all-to-all", groups=group, traffic=M, algorithm="direct", **kw)
            self.solves += 1
        alone = self._alone[akey]
        m = self.arch.model
        kind = "moe" if m.moe_layers >= m.dense_layers else "dense"
        planned = layer_jobs(self.G, m, kind, mesh=decode_mesh, tokens=int(tokens))
        jobs = [Job("kv-transfer", "all-to-all", group, traffic=M, algorithm="direct")]
        for p in planned:
            jobs.append(Job(p.name, p.collective, tuple(tuple(at[r] for r in g) for g in p.groups),
                            p.size_bytes, traffic=p.traffic, after=p.after))
        if len(jobs) > 1:
            res = mix(self.G, jobs, **kw)
            self.solves += 1
            kvj = next(j for j in res.jobs if j.name == "kv-transfer")
            shared = kvj.finish_s - kvj.start_s
            dec = [j for j in res.jobs if j.name != "kv-transfer"]
            dec_mix = max(j.finish_s for j in dec) - min(j.start_s for j in dec)
            skey = key[1:]               # the decode layer alone does not depend on the prefill mesh
            if skey not in self._solo:
                self._solo[skey] = mix(self.G, jobs[1:], **kw).makespan_s
                self.solves += 1
            solo = self._solo[skey]
            slowdown = dec_mix / solo if solo > 0 else 1.0
            # the mix prices the transfer's solo case exactly as price() does; beside traffic it can only be later
            shared = max(shared, float(alone.time_s))
        else:                    # tp = 1, ep = 1 decode: the layer has no collective to share links with
            shared, slowdown = float(alone.time_s), 1.0
        self._cache[key] = (shared, float(alone.time_s), alone.algorithm, float(M.sum()), slowdown)
        return self._cache[key]


def fitting_prefill_meshes(arch, acc, consts, meshes: list[dict[str, int]], isl: int,
                           pool: int) -> list[dict[str, int]]:
    """The prefill pool's meshes whose chips hold one prompt's KV cache per TP group beside the weights."""
    fit = [m for m in meshes if kv_capacity(arch, acc, consts, m, isl) >= math.prod(m.values()) // m.get("tp", 1)]
    if not fit:
        raise BadInput(f"no prefill mesh fits the {pool:,}-chip prefill pool: "
                       + ("no tp x ep mesh divides it" if not meshes else
                          "none holds a prompt's KV cache per TP group beside the weights"), param="disaggregate")
    return fit


def _ctx_base():
    from .sweep import _Ctx
    return _Ctx


class DisaggCtx(_ctx_base()):
    """The sweep's pricing context with the pools split (see the module notes)."""

    def __init__(self, G, arch, acc, consts, pools: Pools, isl, osl, mtp, library, overlap,
                 prefill_mesh: dict[str, int] | None = None, candidates=None):
        super().__init__(arch, acc, consts, NetworkPricer(G, arch.model, ranks=pools.prefill_ranks), isl, osl, mtp,
                         library, overlap)
        self.pools = pools
        self.decode_pricer = NetworkPricer(G, arch.model, ranks=pools.decode_at)
        self.kv = KVPricer(G, arch, pools, isl)
        if prefill_mesh is None and pools.prefill_mesh is not None:
            from ..jobs.step import check_mesh
            prefill_mesh = check_mesh(pools.prefill_mesh, arch.model, command="serve")
        meshes = [dict(prefill_mesh)] if prefill_mesh is not None else pool_meshes(candidates or [], pools.prefill)
        self.prefill_meshes = fitting_prefill_meshes(arch, acc, consts, meshes, isl, pools.prefill)

    @property
    def solves(self) -> int:
        return self.pricer.solves + self.decode_pricer.solves + self.kv.solves

    def point(self, mesh, C, network: bool = True, prefill_network: bool | None = None):
        """The point on decode ``mesh`` at concurrency ``C`` with the prefill mesh of least e2e (ties: least TTFT)."""
        from .model import step_terms
        from .sweep import ServePoint
        D, tp, ep = math.prod(mesh.values()), mesh.get("tp", 1), mesh.get("ep", 1)
        unit = math.lcm(D // tp, D // ep if ep > 1 else 1)
        batch = -(-C // unit) * unit      # the busiest TP group's load on every group (C need not split evenly)
        dec = step_terms(self.arch, self.acc, self.consts, mesh, phase="decode", sequences=batch,
                         context=self.isl + self.osl / 2, pricer=self.decode_pricer if network else None,
                         library=self.library, overlap=self.overlap, mtp=self.mtp)
        pn = network if prefill_network is None else prefill_network
        decode_s = self.osl / self.accepted * dec.time_s
        # best-first over the prefill meshes: a free transfer bounds each one's e2e from below
        cands = []
        for pm in self.prefill_meshes:
            pre = self.prefill(pm, pn)
            g_p = self.pools.prefill // pm.get("tp", 1)
            cands.append((max(pre.time_s + decode_s, C * pre.time_s / g_p), pre.time_s, pm, pre, g_p))
        cands.sort(key=lambda x: (x[0], x[1]))
        best = None
        for lb, _, pm, pre, g_p in cands:
            if best is not None and lb > best[0][0] * (1 + 1e-12):
                break
            if pn:
                kv_s, kv_alone, kv_alg, kv_round, slow = self.kv.price(pm, mesh, dec.tokens)
            else:        # the roofline bound: a free transfer (an upper bound on throughput)
                kv_s, kv_alone, kv_alg, kv_round, slow = 0.0, 0.0, "none", float(
                    kv_traffic(self.arch, self.isl, pm, mesh).sum()), 1.0
            r0 = pre.time_s + kv_s + decode_s
            capacity = g_p / max(pre.time_s, kv_s)
            dec_rate = C / r0
            rate = min(dec_rate, capacity)
            e2e = C / rate
            queue = max(0.0, e2e - r0)
            ttft = pre.time_s + kv_s + queue
            cand = ((e2e, ttft), pm, pre, g_p, kv_s, kv_alone, kv_alg, kv_round, slow, r0, capacity, dec_rate, rate,
                    queue)
            if best is None or cand[0] < best[0]:
                best = cand
        (e2e, ttft), pm, pre, g_p, kv_s, kv_alone, kv_alg, kv_round, slow, r0, capacity, dec_rate, rate, queue = best
        tpot = decode_s / self.osl
        tps = rate * (self.isl + self.osl)
        chips = self.pools.prefill + self.pools.decode
        if dec_rate <= capacity:
            side, bound = "decode", dec.bound
        elif kv_s > pre.time_s:
            side = bound = "kv-transfer"
        else:
            side, bound = "prefill", f"prefill-{pre.bound}"
        terms = DisaggTerms(prefill_chips=self.pools.prefill, decode_chips=self.pools.decode,
                            prefill_mesh=",".join(f"{k}={v}" for k, v in pm.items()),
                            prefill_groups=g_p, prefill_step_s=pre.time_s,
                            kv_bytes_per_prompt=self.arch.kv_bytes_per_sequence(self.isl), kv_bytes_per_round=kv_round,
                            kv_transfer_s=kv_s, kv_transfer_alone_s=kv_alone, kv_algorithm=kv_alg,
                            decode_layer_slowdown=slow, decode_step_s=dec.time_s, decode_batch=batch,
                            prompt_capacity_per_s=capacity, requests_per_s=rate, decode_requests_per_s=dec_rate,
                            queue_s=queue, bound=side,
                            named=None if self.pools.prefill_ranks is None and self.pools.decode_ranks is None
                            else (self.pools.prefill_at, self.pools.decode_at))
        usd = self.acc.usd_per_chip_hour
        per_chip = tps / chips
        return ServePoint(concurrency=C, mesh=dict(mesh), chips=chips,
                          library=dec.libraries() if network else "none",
                          tpot_s=tpot, ttft_s=ttft, e2e_s=e2e, tokens_per_s=tps,
                          tokens_per_s_per_user=1.0 / tpot, tokens_per_s_per_chip=per_chip,
                          tokens_per_s_per_kw=per_chip / (self.acc.tdp_w / 1e3),
                          usd_per_mtok=(chips * usd / 3600 / tps * 1e6) if math.isfinite(usd) else None,
                          bound=bound, accepted=self.accepted, decode=dec, prefill=pre, disagg=terms)
