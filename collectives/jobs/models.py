"""The model catalog: the architecture figures a model step's communication depends on.

A model is a TOML file of flat keys (the catalog's own live in ``jobs/models/*.toml``,
each figure cited to the model's published ``config.json``)::

    name = "my-moe"            # optional (default: the file name without .toml)
    description = "..."        # optional
    source = "..."             # optional: where the figures come from
    layers = 48                # decoder layers                       (HF: num_hidden_layers)
    first_dense = 2            # the first k layers are dense, the rest MoE (first_k_dense_replace)
    hidden = 4096              # residual width                       (hidden_size)
    heads = 32                 # attention (query) heads              (num_attention_heads)
    kv_heads = 8               # optional, default = heads            (num_key_value_heads)
    experts = 64               # routed experts per MoE layer; 0 = a dense model (n_routed_experts)
    top_k = 4                  # experts per token                    (num_experts_per_tok)
    shared = 1                 # optional, default 0: shared (always-on) experts (n_shared_experts)

``load_model(spec)`` takes a catalog name or a path to such a file; a malformed file
raises :class:`fabricsim.topo.errors.BadInput` in one line naming the file and the key
(unknown key, missing key, wrong type, out of range, ``first_dense > layers``,
``top_k > experts`` ...).  Nothing is clipped or defaulted silently.
"""
from __future__ import annotations

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ...topo.errors import BadInput, close_matches
from ...topo.inputs import read_input_text

__all__ = ["Model", "MODEL_KEYS", "load_model", "model_from_dict", "model_names"]

CATALOG_DIR = Path(__file__).resolve().parent / "models"
# key -> (type, required, minimum, maximum).  The maxima are bounds on input, not on any real model
# (I: the largest published configurations are ~10x below them: 126 layers and hidden 16,384 in Llama 3.1
# 405B's config.json, 384 routed experts in Kimi K2's); they keep a mistyped spec from pricing for hours
# (a step prices every layer, an MoE layer every expert's traffic).
MODEL_KEYS: dict[str, tuple[type, bool, int | None, int | None]] = {
    "name": (str, False, None, None), "description": (str, False, None, None), "source": (str, False, None, None),
    "layers": (int, True, 1, 4_096), "first_dense": (int, False, 0, None), "hidden": (int, True, 1, 1 << 20),
    "heads": (int, True, 1, 1 << 16), "kv_heads": (int, False, 1, None), "experts": (int, False, 0, 1 << 20),
    "top_k": (int, False, 0, None), "shared": (int, False, 0, 1 << 10),
}


@dataclass(frozen=True)
class Model:
    """A decoder-only transformer's layout, as far as its communication goes.

    Layers ``0 .. first_dense-1`` are dense, the others MoE (every layer dense when
    ``experts == 0``).
    """
    name: str
    layers: int
    first_dense: int
    hidden: int
    heads: int
    kv_heads: int
    experts: int = 0
    top_k: int = 0
    shared: int = 0
    description: str = ""
    source: str = ""

    @property
    def moe_layers(self) -> int:
        return self.layers - self.first_dense if self.experts else 0

    @property
    def dense_layers(self) -> int:
        return self.layers - self.moe_layers

    def kind(self, index: int) -> str:
        """``dense`` or ``moe`` for layer ``index`` (0-based)."""
        return "moe" if self.experts and index >= self.first_dense else "dense"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"moe_layers": self.moe_layers, "dense_layers": self.dense_layers}


def model_from_dict(data: dict, where: str = "<dict>") -> Model:
    """Check and build a :class:`Model` from flat keys; errors name ``where`` and the key."""
    if not isinstance(data, dict):
        raise BadInput(f"{where}: a model is a table of keys ({', '.join(MODEL_KEYS)})")
    for key in data:
        if key not in MODEL_KEYS:
            raise BadInput(f"{where}: unknown key {key!r}{close_matches(key, MODEL_KEYS)}; "
                           f"valid: {', '.join(MODEL_KEYS)}")
    for key, (kind, required, low, high) in MODEL_KEYS.items():
        if key not in data:
            if required:
                raise BadInput(f"{where}: missing key {key!r} ({_what(key)})")
            continue
        v = data[key]
        # bool is an int in Python: refuse it explicitly, as TOML's true/false is no count
        if not isinstance(v, kind) or isinstance(v, bool):
            raise BadInput(f"{where}: {key} = {v!r} must be {'an integer' if kind is int else 'a string'}, "
                           f"not {type(v).__name__}")
        if low is not None and v < low:
            raise BadInput(f"{where}: {key} = {v} must be at least {low}")
        if high is not None and v > high:
            raise BadInput(f"{where}: {key} = {v:,} is past the model's range (at most {high:,}; no published model "
                           f"comes within 10x of it)")
    d = dict(data)
    name = d.get("name") or (Path(where).stem if where.endswith(".toml") else "model")
    layers, first_dense = d["layers"], d.get("first_dense", 0)
    heads = d["heads"]
    kv_heads = d.get("kv_heads", heads)
    experts, top_k, shared = d.get("experts", 0), d.get("top_k", 0), d.get("shared", 0)
    if first_dense > layers:
        raise BadInput(f"{where}: first_dense = {first_dense} > layers = {layers}")
    if kv_heads > heads or heads % kv_heads:
        raise BadInput(f"{where}: kv_heads = {kv_heads} must divide heads = {heads} (grouped-query attention)")
    if experts:
        if "top_k" not in d:
            raise BadInput(f"{where}: missing key 'top_k' (experts per token; the model has {experts} experts)")
        if not 1 <= top_k <= experts:
            raise BadInput(f"{where}: top_k = {top_k} must be in 1..experts = {experts}")
    elif top_k or shared:
        raise BadInput(f"{where}: top_k = {top_k} / shared = {shared} given but experts = 0 (a dense model); "
                       f"set experts or drop them")
    return Model(name=name, layers=layers, first_dense=first_dense, hidden=d["hidden"], heads=heads,
                 kv_heads=kv_heads, experts=experts, top_k=top_k, shared=shared,
                 description=d.get("description", ""), source=d.get("source", ""))


def _what(key: str) -> str:
    return {"layers": "decoder layers, HF num_hidden_layers", "hidden": "residual width, HF hidden_size",
            "heads": "attention heads, HF num_attention_heads"}.get(key, key)


def _read(path: Path) -> Model:
    text = read_input_text(path, "a model TOML file")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{path}: {exc}") from None  # tomllib names line and column
    return model_from_dict(data, str(path))


def model_names() -> list[str]:
    """The catalog's model names, sorted."""
    return sorted(p.stem for p in CATALOG_DIR.glob("*.toml"))


def load_model(spec: str | Path) -> Model:
    """A catalog name (``deepseek-r1``, ``kimi-k2``, ``gpt-oss-120b``) or a ``.toml`` file -> :class:`Model`.

    Examples
    --------
    >>> m = load_model("deepseek-r1")
    >>> (m.layers, m.dense_layers, m.moe_layers, m.experts, m.top_k)
    (61, 3, 58, 256, 8)
    """
    text = str(spec)
    if text.endswith(".toml") or Path(text).is_file():
        return _read(Path(text))
    if text not in model_names():
        raise BadInput(f"unknown model {text!r}{close_matches(text, model_names())}; choose one of: "
                       f"{', '.join(model_names())}, or a .toml file", param="model")
    return _read(CATALOG_DIR / f"{text}.toml")
