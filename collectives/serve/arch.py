"""What a model step computes and reads: parameters, FLOPs, weight and KV-cache bytes per layer.

The communication layout (layers, hidden, heads, experts) is the step catalog's
:class:`~fabricsim.collectives.jobs.models.Model`; :class:`Arch` adds what a roofline needs,
from ``arch.toml`` beside this module (each figure cited to the model's ``config.json``):
attention type and widths, expert and dense MLP widths, vocabulary, the MTP module, and
the serving precisions (bytes per weight and KV element).

Counting conventions (per token, per layer; SwiGLU MLPs have 3 matrices):

* a matrix of ``p`` parameters costs ``2 p`` FLOPs per token and ``p x bytes`` when read;
* GQA attention: ``hidden x (heads + 2 kv_heads) x head_dim + heads x head_dim x hidden``
  parameters; context ``4 x heads x head_dim x L`` FLOPs (scores and values over ``L``
  cached tokens; ``L`` capped at the window on sliding-window layers);
* MLA attention (DeepSeek): ``hidden x q_lora + q_lora x heads x (nope + rope) +
  hidden x (kv_lora + rope) + kv_lora x heads x (nope + v) + heads x v x hidden``
  parameters.  Decode runs the absorbed form: context ``2 x heads x (2 kv_lora + rope) x L``
  FLOPs over the latent cache; prefill the expanded form: ``2 x heads x (nope + rope + v) x L``;
* KV cache per token per layer: GQA ``2 x kv_heads x head_dim``, MLA ``kv_lora + rope``
  elements of ``kv_bytes``.

Precisions: routed experts run at ``expert_precision``, the other weights' GEMMs (attention
projections, dense and shared MLPs, the head) at ``attention_precision``, and the attention core
(the context FLOPs, over the cache) at the KV cache's own precision (:attr:`Arch.kv_precision`:
FlashMLA runs BF16 on a BF16 cache; an FP8 cache runs FP8 attention, LMSYS GB200 Part II).

Not counted: norms, rotary embedding, the router GEMM (< 0.1% of a layer's FLOPs for
these models), biases and attention sinks.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

from ...topo.accelerators import PRECISIONS
from ...topo.errors import BadInput
from ..jobs.models import Model, load_model

__all__ = ["Arch", "ChipConstants", "CONSTANT_KEYS", "arch_of", "chip_constants"]

_FILE = Path(__file__).with_name("arch.toml")
_ARCH_KEYS = {"attention", "head_dim", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
              "v_head_dim", "moe_intermediate", "dense_intermediate", "vocab", "sliding_window", "sliding_layers",
              "mtp_layers", "expert_bytes_per_param", "other_bytes_per_param", "expert_precision",
              "attention_precision", "kv_bytes", "mtp_acceptance"}


@lru_cache(maxsize=1)
def _data() -> dict:
    with open(_FILE, "rb") as fh:
        return tomllib.load(fh)


@dataclass(frozen=True)
class ChipConstants:
    """What a chip delivers of its roofline and what a kernel costs (``arch.toml`` [chip.*])."""
    compute_efficiency: float
    hbm_efficiency: float
    hbm_usable: float
    launch_us: float
    attention_kernels: int
    mlp_kernels: int
    moe_kernels: int
    head_kernels: int
    mla_attention_kernels: int | None = None    # MLA attention (None: attention_kernels)
    shared_expert_kernels: int = 0              # per shared expert of a MoE block
    prefill_compute_efficiency: float | None = None   # prefill's fraction of dense peak (None: compute_efficiency)
    layer_us: float = 0.0                       # fixed time per transformer layer per step (a persistent kernel's)

    def compute_efficiency_for(self, phase: str) -> float:
        """Fraction of dense peak a ``decode`` or ``prefill`` step's GEMMs reach."""
        if phase == "prefill" and self.prefill_compute_efficiency is not None:
            return self.prefill_compute_efficiency
        return self.compute_efficiency

    def attention_kernels_for(self, attention: str) -> int:
        """Kernels of one attention block of type ``gqa`` or ``mla``."""
        if attention == "mla" and self.mla_attention_kernels is not None:
            return self.mla_attention_kernels
        return self.attention_kernels


# what a user may override (serve --chip-set KEY=VALUE): fractions of a roofline, times, kernel counts
_FRACTIONS = ("compute_efficiency", "prefill_compute_efficiency", "hbm_efficiency", "hbm_usable")
_TIMES_US = ("launch_us", "layer_us")
_KERNELS = ("attention_kernels", "mla_attention_kernels", "mlp_kernels", "moe_kernels", "shared_expert_kernels",
            "head_kernels")
CONSTANT_KEYS = _FRACTIONS + _TIMES_US + _KERNELS


def chip_constants(name: str = "default", overrides=None) -> ChipConstants:
    """The chip's own [chip.NAME] table over the default one, then ``overrides`` over both.

    Parameters
    ----------
    name : the chip (an accelerator name; a chip without a [chip.NAME] table takes the default's).
    overrides : chip constants to replace, as a dict or ``KEY=VALUE`` strings (``serve --chip-set``), e.g.
        ``{"prefill_compute_efficiency": 0.25}``: fractions of peak in [1e-6, 1] (compute_efficiency,
        prefill_compute_efficiency, hbm_efficiency, hbm_usable), microseconds >= 0 (launch_us, layer_us) or
        kernel counts >= 0 (attention_kernels, mla_attention_kernels, mlp_kernels, moe_kernels,
        shared_expert_kernels, head_kernels).

    Examples
    --------
    >>> chip_constants("jalapeno", ["prefill_compute_efficiency=0.25"]).prefill_compute_efficiency
    0.25
    >>> chip_constants("gb300", {"launch_us": 0}).launch_us
    0.0
    """
    chips = _data()["chip"]
    d = dict(chips["default"]) | dict(chips.get(name, {}))
    return ChipConstants(**(d | _checked_overrides(overrides)))


def _checked_overrides(overrides) -> dict:
    if not overrides:
        return {}
    if isinstance(overrides, str):
        overrides = [overrides]
    if not isinstance(overrides, dict):
        pairs = {}
        for item in overrides:
            key, eq, val = str(item).partition("=")
            if not eq or not key.strip():
                raise BadInput(f"{str(item)[:120]!r} is not KEY=VALUE (e.g. --chip-set prefill_compute_efficiency=0.25)",
                               param="constants")
            pairs[key.strip()] = val.strip()
        overrides = pairs
    out = {}
    for key, val in overrides.items():
        if key not in CONSTANT_KEYS:
            raise BadInput(f"chip constant {str(key)[:80]!r} is unknown; choose one of: {', '.join(CONSTANT_KEYS)}",
                           param="constants")
        try:
            x = float(val)
        except (TypeError, ValueError):
            x = float("nan")
        if key in _FRACTIONS:
            ok, what = 1e-6 <= x <= 1, "a fraction of peak in [1e-06, 1]"   # a denormal would make times inf
        elif key in _TIMES_US:
            ok, what = 0 <= x <= 1e6, "microseconds in [0, 1e6]"
        else:
            ok, what = 0 <= x <= 1000 and x == int(x), "a whole number of kernels in [0, 1000]"
        if not ok:
            raise BadInput(f"chip constant {key}={str(val)[:40]!r} must be {what}", param="constants")
        out[key] = int(x) if key in _KERNELS else x
    return out


@dataclass(frozen=True)
class Arch:
    """A model's compute and memory figures (see the module notes)."""
    model: Model
    attention: str
    moe_intermediate: int
    dense_intermediate: int
    vocab: int
    expert_bytes_per_param: float
    other_bytes_per_param: float
    expert_precision: str
    attention_precision: str
    kv_bytes: float
    head_dim: int = 0
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    sliding_window: int = 0
    sliding_layers: int = 0
    mtp_layers: int = 0
    mtp_acceptance: float = 0.0

    # ---------------------------------------------------------------- parameters
    @property
    def attn_params(self) -> float:
        m, h = self.model, self.model.hidden
        if self.attention == "gqa":
            return h * (m.heads + 2 * m.kv_heads) * self.head_dim + m.heads * self.head_dim * h
        return (h * self.q_lora_rank + self.q_lora_rank * m.heads * (self.qk_nope_head_dim + self.qk_rope_head_dim)
                + h * (self.kv_lora_rank + self.qk_rope_head_dim)
                + self.kv_lora_rank * m.heads * (self.qk_nope_head_dim + self.v_head_dim)
                + m.heads * self.v_head_dim * h)

    @property
    def expert_params(self) -> float:
        """One routed (or shared) expert: SwiGLU, 3 matrices."""
        return 3.0 * self.model.hidden * self.moe_intermediate

    @property
    def dense_mlp_params(self) -> float:
        return 3.0 * self.model.hidden * self.dense_intermediate

    @property
    def head_params(self) -> float:
        return float(self.vocab * self.model.hidden)

    def total_params(self) -> float:
        """Every weight (attention, MLPs, all experts, LM head and embedding)."""
        m = self.model
        return (m.layers * self.attn_params + m.dense_layers * self.dense_mlp_params
                + m.moe_layers * (m.experts + m.shared) * self.expert_params + 2 * self.head_params)

    # ---------------------------------------------------------------- attention context
    def kv_elems_per_token(self) -> float:
        """KV-cache elements one token adds to one layer."""
        if self.attention == "gqa":
            return 2.0 * self.model.kv_heads * self.head_dim
        return float(self.kv_lora_rank + self.qk_rope_head_dim)

    def kv_shard(self, tp: int) -> int:
        """How many ways TP splits a layer's KV cache: GQA by KV head (at most kv_heads), MLA not at all."""
        return min(tp, self.model.kv_heads) if self.attention == "gqa" else 1

    def context_tokens(self, L: float) -> float:
        """Cached tokens a token attends to, summed over the layers (sliding layers capped at the window)."""
        m = self.model
        full = m.layers - self.sliding_layers
        return full * L + self.sliding_layers * min(L, self.sliding_window or L)

    def context_flops_per_token(self, L: float, phase: str) -> float:
        """Attention's FLOPs over ``L`` cached tokens, one token, all layers (the ``x L`` term)."""
        m = self.model
        if self.attention == "gqa":
            per = 4.0 * m.heads * self.head_dim
        elif phase == "decode":
            per = 2.0 * m.heads * (2 * self.kv_lora_rank + self.qk_rope_head_dim)
        else:
            per = 2.0 * m.heads * (self.qk_nope_head_dim + self.qk_rope_head_dim + self.v_head_dim)
        return per * self.context_tokens(L)

    @property
    def kv_precision(self) -> str:
        """The precision the attention core (scores and values over the cache) runs at: the KV cache's
        elements (FlashMLA runs BF16 on a BF16 cache; an FP8 cache runs FP8 attention, LMSYS GB200 Part II)."""
        return "bf16" if self.kv_bytes >= 2 else "fp8" if self.kv_bytes >= 1 else "fp4"

    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes of one token over all layers (sliding layers hold at most the window)."""
        return self.kv_elems_per_token() * self.kv_bytes * self.model.layers

    def kv_bytes_per_sequence(self, L: float) -> float:
        """KV-cache bytes of one sequence of ``L`` tokens (all layers, unsharded)."""
        return self.kv_elems_per_token() * self.kv_bytes * self.context_tokens(L)


def arch_of(model: Model | str) -> Arch:
    """The :class:`Arch` of a catalog model (``arch.toml`` must list it)."""
    model = load_model(model) if isinstance(model, str) else model
    d = _data()
    if model.name not in d or model.name == "chip":
        known = sorted(k for k in d if k != "chip")
        raise BadInput(f"serve has no compute/memory figures for model {model.name!r}; "
                       f"choose one of: {', '.join(known)}", param="model")
    a = dict(d[model.name])
    extra = sorted(set(a) - _ARCH_KEYS)
    if extra:
        raise BadInput(f"{_FILE.name}: [{model.name}] unknown key {extra[0]!r}")
    for key in ("expert_precision", "attention_precision"):
        if a[key] not in PRECISIONS:
            raise BadInput(f"{_FILE.name}: [{model.name}] {key} = {a[key]!r}; choose one of: {', '.join(PRECISIONS)}")
    return Arch(model=model, **a)
