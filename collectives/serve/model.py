"""The serving step model: per layer and phase, compute, memory, network and launch time.

For a mesh ``tp x ep x dp`` (the step model's layout, :mod:`fabricsim.collectives.jobs.step`:
attention and dense MLPs tensor-parallel over ``tp``, the TP groups data-parallel over the
rest, routed experts expert-parallel over ``ep``, shared experts TP-sharded) and a step of
``S`` sequences x ``q`` tokens each (decode: q = 1 + MTP draft tokens; prefill: one
sequence of ISL tokens), per chip:

* **compute** = FLOPs / (dense FLOP/s at the block's precision x compute efficiency, the
  prefill's own where ``arch.toml`` gives one; the attention core's context FLOPs at the KV cache's
  precision):
  attention ``T_g x (2 P_attn + context(L)) / tp``, dense MLP ``T_g x 2 P_mlp / tp``,
  experts ``(T x top_k / chips) x 2 P_expert`` (with ``ep = 1``: TP-sharded, the same total),
  shared experts ``T_g x 2 P_expert / tp``, where ``T_g`` = tokens per TP group;
* **memory** = bytes read / (HBM B/s x HBM efficiency): weights actually read -- attention
  and dense weights ``/ tp``, routed experts only the distinct ones the step's tokens touch:
  E[distinct] = n (1 - (1 - k/n)^t) for n experts, top-k, t tokens routed over them (the
  chip holds n/ep of them) -- plus the KV cache the batch reads (decode) or writes (prefill);
* **network** = the layer's collectives priced by the flow solver with a named library
  (:mod:`.network`);
* **launch** = kernels per layer x per-kernel launch cost (``arch.toml`` [chip]); the attention
  block's kernels by attention type (GQA, MLA), a MoE block's routed path plus each shared expert's;
  plus a chip's fixed time per transformer layer (``layer_us``: Jalapeño's persistent kernel runs
  no per-kernel launches but a fixed cost per layer, fitted, see ``arch.toml``).

A block's compute and memory overlap (roofline: the larger counts); network and launch add
in series (``overlap="none"``).  ``overlap="two-microbatch"`` (DeepSeek's decode and
prefill overlap): the batch is split in two halves whose compute hides the other's
communication, a layer taking max(2 x (roofline + launch of a half), 2 x network of a half)
-- each half reads the weights again.  The hiding is ideal, so the gain is an upper bound: LMSYS
measured two-batch overlap at +25.5% in decode and +27-35% in prefill where this gains 1.4-1.6x
(docs/token-validation.md).  Every term is reported per layer kind (:class:`LayerTerms`), with the
resource that bounds it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ...topo.accelerators import PRECISIONS, Accelerator
from ...topo.errors import BadInput
from .arch import Arch, ChipConstants
from .network import NetLayer, NetworkPricer

__all__ = ["OVERLAPS", "LayerTerms", "StepTerms", "step_terms", "weights_per_chip_bytes", "kv_capacity",
           "expected_distinct", "acceptance_length"]

OVERLAPS = ("none", "two-microbatch")
RESOURCES = ("compute", "memory", "network", "launch")


def expected_distinct(n: int, k: int, tokens: float) -> float:
    """Expected distinct experts of ``n`` that ``tokens`` tokens, each picking ``k`` uniformly, touch."""
    if n <= 0 or tokens <= 0:
        return 0.0
    return n * (1.0 - (1.0 - k / n) ** tokens)


def acceptance_length(mtp: int, p: float) -> float:
    """Tokens a step emits per sequence with ``mtp`` draft tokens each accepted with probability ``p``
    (a draft counts only if every earlier one was accepted): 1 + p + ... + p^mtp."""
    return sum(p ** i for i in range(mtp + 1))


@dataclass(frozen=True)
class LayerTerms:
    """One layer of a kind (``count`` such layers in the step), per chip."""
    kind: str                 # dense | moe | head | mtp
    count: int
    tokens: int               # tokens of the step through this layer (whole mesh)
    flops: float              # per chip
    weight_bytes: float       # read per chip
    kv_bytes: float           # read (decode) or written (prefill) per chip
    compute_s: float
    memory_s: float
    network_s: float
    launch_s: float
    time_s: float             # one layer, after the overlap policy
    net: NetLayer | None = field(default=None, repr=False)

    @property
    def bound(self) -> str:
        """The resource with the largest term."""
        terms = dict(zip(RESOURCES, (self.compute_s, self.memory_s, self.network_s, self.launch_s)))
        return max(terms, key=terms.get)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "count": self.count, "tokens": self.tokens, "flops": self.flops,
                "weight_bytes": self.weight_bytes, "kv_bytes": self.kv_bytes, "compute_s": self.compute_s,
                "memory_s": self.memory_s, "network_s": self.network_s, "launch_s": self.launch_s,
                "time_s": self.time_s, "bound": self.bound,
                "collectives": [c.as_dict() for c in self.net.collectives] if self.net else []}


@dataclass(frozen=True)
class StepTerms:
    """A whole step: its layers by kind, the overlap policy and what bounds it."""
    phase: str
    mesh: dict
    chips: int
    sequences: int
    tokens: int               # through the main layers
    context: float            # cached tokens attended to (decode: mean over the output)
    overlap: str
    layers: tuple
    time_s: float
    notes: tuple = ()

    @property
    def bound(self) -> str:
        """The resource with the largest share of the step (terms summed over layers)."""
        tot = {r: sum(getattr(t, f"{r}_s") * t.count for t in self.layers) for r in RESOURCES}
        return max(tot, key=tot.get)

    def libraries(self) -> str:
        """``collective=library`` per collective kind the step ran, e.g. ``all-reduce=trtllm,all-to-all=deepep-ll``."""
        seen: dict[str, str] = {}
        for t in self.layers:
            if t.net:
                seen.update(t.net.libraries())
        return ",".join(f"{k}={v}" for k, v in sorted(seen.items())) or "none"

    def summary(self) -> str:
        m = ",".join(f"{k}={v}" for k, v in self.mesh.items())
        return (f"{self.phase} step, mesh {m}, {self.tokens:,} tokens: {self.time_s * 1e3:,.3f} ms, "
                f"{self.bound}-bound ({self.libraries()})")

    def __repr__(self) -> str:
        return f"StepTerms({self.summary()})"

    def to_text(self) -> str:
        rows = [f"{'layer':<6} {'count':>5} {'compute us':>11} {'memory us':>10} {'network us':>11} "
                f"{'launch us':>10} {'layer us':>9}  bound"]
        for t in self.layers:
            rows.append(f"{t.kind:<6} {t.count:>5} {t.compute_s * 1e6:>11.2f} {t.memory_s * 1e6:>10.2f} "
                        f"{t.network_s * 1e6:>11.2f} {t.launch_s * 1e6:>10.2f} {t.time_s * 1e6:>9.2f}  {t.bound}")
        return self.summary() + "\n" + "\n".join(rows)

    def as_dict(self) -> dict[str, Any]:
        return {"phase": self.phase, "mesh": dict(self.mesh), "chips": self.chips, "sequences": self.sequences,
                "tokens": self.tokens, "context": self.context, "overlap": self.overlap, "time_s": self.time_s,
                "bound": self.bound, "library": self.libraries(), "layers": [t.as_dict() for t in self.layers],
                "notes": list(self.notes)}


def _rate(acc: Accelerator, precision: str, notes: list[str]) -> float:
    """Dense FLOP/s at ``precision``; a chip without it or anything wider runs at its widest precision."""
    try:
        return acc.flops(precision)
    except BadInput:
        have = [p for p in PRECISIONS if p in acc.flops_per_s]
        notes.append(f"{acc.name} lists no {precision} compute; {precision} GEMMs run at its {have[-1]} rate")
        return acc.flops(have[-1])


def weights_per_chip_bytes(arch: Arch, mesh: dict[str, int]) -> float:
    """Weights one chip of the mesh holds: attention, dense MLPs, shared experts, LM head and
    embedding ``/ tp``; routed experts ``n/ep`` whole ones (``ep = 1``: all, TP-sharded); MTP modules."""
    m = arch.model
    tp, ep = mesh.get("tp", 1), mesh.get("ep", 1)
    other = arch.other_bytes_per_param
    moe_layers = m.moe_layers + arch.mtp_layers
    per = (m.layers + arch.mtp_layers) * arch.attn_params * other / tp
    per += m.dense_layers * arch.dense_mlp_params * other / tp
    per += moe_layers * m.shared * arch.expert_params * other / tp
    per += 2 * arch.head_params * other / tp
    routed = moe_layers * m.experts * arch.expert_params * arch.expert_bytes_per_param
    per += routed / ep if ep > 1 else routed / tp
    return per


def kv_capacity(arch: Arch, acc: Accelerator, consts: ChipConstants, mesh: dict[str, int], seq_len: int) -> int:
    """Sequences of ``seq_len`` tokens whose KV cache fits beside the weights, over the whole mesh
    (each TP group holds its own sequences; a TP rank holds its KV shard)."""
    chips = math.prod(mesh.values())
    tp = mesh.get("tp", 1)
    free = acc.hbm_bytes * consts.hbm_usable - weights_per_chip_bytes(arch, mesh)
    if not free > 0:
        return 0
    per_seq = arch.kv_bytes_per_sequence(seq_len) / arch.kv_shard(tp)
    return int(chips // tp) * int(free // per_seq)


def _layer(kind: str, count: int, arch: Arch, acc: Accelerator, consts: ChipConstants, mesh: dict[str, int],
           sequences: float, tokens: float, context: float, phase: str, pricer: NetworkPricer | None,
           library: str, notes: list[str]) -> tuple[float, float, float, float, float, float, float, NetLayer | None]:
    """(flops, weight_bytes, kv_bytes, compute_s, memory_s, network_s, launch_s, net) of one layer, per chip."""
    m = arch.model
    tp, ep = mesh.get("tp", 1), mesh.get("ep", 1)
    chips = math.prod(mesh.values())
    g_tp = chips // tp
    T_g, S_g = tokens / g_tp, sequences / g_tp
    other = arch.other_bytes_per_param
    r_other = _rate(acc, arch.attention_precision, notes)
    r_exp = _rate(acc, arch.expert_precision, notes)
    r_ctx = _rate(acc, arch.kv_precision, notes)     # the attention core runs on the KV cache's elements
    hbm = acc.hbm_Bps * consts.hbm_efficiency
    eff = consts.compute_efficiency_for(phase)
    blocks = []     # (flops at other precision, at expert precision, at KV precision, weight bytes, kv bytes)
    kernels = 0
    if kind == "head":
        blocks.append((T_g * 2 * arch.head_params / tp, 0.0, 0.0, arch.head_params * other / tp, 0.0))
        kernels = consts.head_kernels
    else:
        ctx = arch.context_flops_per_token(context, phase) / m.layers
        kv_layer = arch.kv_elems_per_token() * arch.kv_bytes * arch.context_tokens(context) / m.layers
        if phase == "decode":
            kv = S_g * kv_layer / arch.kv_shard(tp)
        else:   # prefill writes each token's KV once (the attention tiles reread it from on-chip memory)
            kv = T_g * arch.kv_elems_per_token() * arch.kv_bytes / arch.kv_shard(tp)
        blocks.append((T_g * 2 * arch.attn_params / tp, 0.0, T_g * ctx / tp, arch.attn_params * other / tp, kv))
        kernels += consts.attention_kernels_for(arch.attention)
        if kind == "dense":
            blocks.append((T_g * 2 * arch.dense_mlp_params / tp, 0.0, 0.0, arch.dense_mlp_params * other / tp, 0.0))
            kernels += consts.mlp_kernels
        else:   # moe (and an MTP module, one MoE layer)
            E, k = m.experts, m.top_k
            if ep > 1:
                t_route = tokens / (chips // ep)         # tokens routed over one EP group's experts
                distinct = expected_distinct(E, k, t_route) / ep
                f_exp = tokens * k / chips * 2 * arch.expert_params
                b_exp = distinct * arch.expert_params * arch.expert_bytes_per_param
            else:
                distinct = expected_distinct(E, k, T_g)
                f_exp = T_g * k * 2 * arch.expert_params / tp
                b_exp = distinct * arch.expert_params * arch.expert_bytes_per_param / tp
            f_sh = T_g * m.shared * 2 * arch.expert_params / tp
            b_sh = m.shared * arch.expert_params * other / tp
            blocks.append((f_sh, f_exp, 0.0, b_sh + b_exp, 0.0))
            kernels += consts.moe_kernels + m.shared * consts.shared_expert_kernels
    flops = sum(b[0] + b[1] + b[2] for b in blocks)
    wbytes = sum(b[3] for b in blocks)
    kvb = sum(b[4] for b in blocks)
    comp = [(b[0] / r_other + b[1] / r_exp + b[2] / r_ctx) / eff for b in blocks]
    mem = [(b[3] + b[4]) / hbm for b in blocks]
    net = None
    net_s = 0.0
    if pricer is not None and kind != "head" and int(tokens) == tokens:
        net = pricer.layer("moe" if kind in ("moe", "mtp") else "dense", mesh, int(tokens), library)
        net_s = net.time_s
    roof = sum(max(c, b) for c, b in zip(comp, mem))
    fixed_s = kernels * consts.launch_us * 1e-6 + (consts.layer_us * 1e-6 if kind != "head" else 0.0)
    return flops, wbytes, kvb, sum(comp), sum(mem), net_s, fixed_s, net, roof


def step_terms(arch: Arch, acc: Accelerator, consts: ChipConstants, mesh: dict[str, int], *, phase: str,
               sequences: int, context: float, pricer: NetworkPricer | None = None, library: str = "auto",
               overlap: str = "none", mtp: int = 0) -> StepTerms:
    """Price one step: every layer kind's compute, memory, network and launch terms (see the module notes).

    Parameters
    ----------
    arch, acc, consts : the model, the chip and its efficiency / launch constants.
    mesh : ``{"tp": .., "ep": .., "dp": ..}``; its product is the chips the step runs on.
    phase : ``decode`` (``sequences`` x (1 + ``mtp``) tokens) or ``prefill`` (``sequences`` tokens of
        one prompt; ``context`` = its length).
    context : decode: cached tokens each sequence attends to; prefill: the prompt length.
    pricer : prices the network (``None``: no network term, the roofline alone).
    library : ``auto`` or a library name (:data:`.network.LIBRARY_CHOICES`).
    overlap : ``none`` or ``two-microbatch``.
    mtp : draft tokens per step (decode); the model needs an MTP module.
    """
    if overlap not in OVERLAPS:
        raise BadInput(f"overlap {overlap!r}; choose one of: {', '.join(OVERLAPS)}")
    if phase not in ("decode", "prefill"):
        raise BadInput(f"phase {phase!r}; choose decode or prefill")
    if isinstance(sequences, bool) or not isinstance(sequences, int) or sequences < 1:
        raise BadInput(f"concurrency {sequences!r} must be a positive integer")
    if mtp and not arch.mtp_layers:
        raise BadInput(f"--mtp {mtp}: {arch.model.name} has no multi-token-prediction module; use --mtp 0")
    m = arch.model
    chips = math.prod(mesh.values())
    g_tp = chips // mesh.get("tp", 1)
    unit = sequences          # decode: sequences; prefill: prompt tokens
    if unit % g_tp:
        what = "sequences" if phase == "decode" else "prompt tokens"
        raise BadInput(f"{unit:,} {what} do not split evenly over the {g_tp:,} TP groups of mesh "
                       f"{','.join(f'{k}={v}' for k, v in mesh.items())}; use a multiple of {g_tp:,}")
    q = 1 + mtp if phase == "decode" else 1
    tokens = sequences * q
    notes: list[str] = []
    halves = 2 if overlap == "two-microbatch" else 1
    if halves == 2 and (tokens % 2 or sequences % 2):
        raise BadInput(f"two-microbatch overlap needs an even batch; {sequences} sequences do not split in two")
    kinds = [("dense", m.dense_layers), ("moe", m.moe_layers), ("head", 1)]
    if mtp:
        kinds.append(("mtp", mtp))
    layers = []
    total = 0.0
    for kind, count in kinds:
        if not count:
            continue
        # an MTP draft pass runs the module on one token per sequence; main layers on all q
        s_tok = sequences if kind == "mtp" else tokens
        f, wb, kvb, c, mm, n, la, net, roof = _layer(kind if kind != "mtp" else "moe", count, arch, acc, consts,
                                                      mesh, sequences / halves, s_tok / halves, context, phase,
                                                      pricer, library, notes)
        if halves == 2:
            t = max(2 * (roof + la), 2 * n)
            f, wb, kvb, c, mm, n, la = 2 * f, 2 * wb, 2 * kvb, 2 * c, 2 * mm, 2 * n, 2 * la
        else:
            t = roof + n + la
        if kind == "mtp":   # the draft head runs with each draft pass
            hf, hwb, _, hc, hm, _, hla, _, hroof = _layer("head", 1, arch, acc, consts, mesh, sequences, sequences,
                                                           context, phase, None, library, notes)
            f, wb, c, mm, la, t = f + hf, wb + hwb, c + hc, mm + hm, la + hla, t + hroof + hla
        layers.append(LayerTerms(kind=kind, count=count, tokens=int(s_tok), flops=f, weight_bytes=wb, kv_bytes=kvb,
                                 compute_s=c, memory_s=mm, network_s=n, launch_s=la, time_s=t, net=net))
        total += count * t
    return StepTerms(phase=phase, mesh=dict(mesh), chips=chips, sequences=sequences, tokens=tokens,
                     context=float(context), overlap=overlap, layers=tuple(layers), time_s=total,
                     notes=tuple(dict.fromkeys(notes)))
