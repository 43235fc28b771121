"""The catalog registry: fabric names -> pure builder functions.

Parameters given as strings (``--set racks=8``) are checked against the builder's
signature and converted by its annotations: ``int``, ``float``, ``bool``, ``str``,
``Literal[...]`` (the choices) and ``tuple[int, ...]`` (spelled ``8x12x12``).
"""
from __future__ import annotations

import inspect
import json
import math
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable

import networkx as nx

from ..topo.errors import BadInput, close_matches

__all__ = ["Fabric", "FABRICS", "register", "build", "parse_params", "param_specs", "convert_value", "close_matches",
           "describe"]


@dataclass(frozen=True)
class Fabric:
    name: str
    builder: Callable[..., nx.Graph]
    description: str
    source: str


FABRICS: dict[str, Fabric] = {}


def register(name: str, *, description: str, source: str):
    """Decorator: add a builder to the catalog under ``name``."""
    def deco(fn):
        FABRICS[name] = Fabric(name, fn, description, source)
        return fn
    return deco


def _fabric(name: str) -> Fabric:
    try:
        return FABRICS[name]
    except KeyError:
        shown = repr(name) if len(str(name)) <= 80 else f"{str(name)[:40]!r}... ({len(str(name)):,} characters)"
        raise BadInput(f"unknown fabric {shown}{close_matches(str(name)[:200], FABRICS)}; "
                         f"choose one of: {', '.join(sorted(FABRICS))}") from None


def param_specs(name: str) -> dict[str, inspect.Parameter]:
    """The keyword parameters a catalog builder takes, with defaults and annotations."""
    fn = _fabric(name).builder
    return dict(inspect.signature(fn, eval_str=True).parameters)


def describe(ann) -> str:
    """What a builder parameter of annotation ``ann`` accepts, in words (``params`` prints it)."""
    if typing.get_origin(ann) is typing.Literal:
        return "one of " + ", ".join(map(str, typing.get_args(ann)))
    if typing.get_origin(ann) is tuple:
        return "integers joined by x (e.g. 8x12x12)"
    if ann is float:
        return "a finite number"
    return getattr(ann, "__name__", str(ann))


def convert_value(key: str, raw: Any, ann) -> Any:
    """A parameter value spelled as a string (``--set``, a fabric file) -> the annotation's type.

    ``ann`` is the builder parameter's annotation: ``int``, ``float``, ``bool``, ``str``,
    ``Literal[...]``, ``tuple[int, ...]`` (``"8x12x12"``) or one of these ``| None``.  Values
    that are not strings (a TOML integer or array) are returned as they are.

    Examples
    --------
    >>> convert_value("dims", "8x8x8", tuple[int, ...]), convert_value("g", "4", int | None)
    ((8, 8, 8), 4)
    """
    if not isinstance(raw, str):
        return raw
    args = [a for a in typing.get_args(ann) if a is not type(None)]
    if typing.get_origin(ann) in (typing.Union, types.UnionType) and len(args) == 1:
        ann = args[0]   # int | None: a string given is the int
    origin = typing.get_origin(ann)
    try:
        if origin is typing.Literal:
            choices = typing.get_args(ann)
            if raw not in choices:
                raise ValueError
            return raw
        if origin is tuple:
            return tuple(int(p) for p in raw.lower().replace(",", "x").split("x"))
        if ann is bool:
            if raw.lower() in ("1", "true", "yes", "on"):
                return True
            if raw.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if ann is float:
            val = float(raw)
            if not math.isfinite(val):   # "inf", "nan", "1e400": no fabric figure is infinite
                raise ValueError
            return val
        if ann in (int, str):
            return ann(raw)
    except ValueError:
        raise BadInput(f"{key}={raw!r} is not valid: expected {describe(ann)}") from None
    return raw


def parse_params(name: str, raw: dict[str, Any]) -> dict[str, Any]:
    """Check ``raw`` against the builder's signature and convert string values."""
    specs = param_specs(name)
    out = {}
    for key, val in raw.items():
        if key not in specs:
            raise BadInput(f"{name} has no parameter {key!r}{close_matches(key, specs)}; "
                             f"valid keys: {', '.join(specs) or '(none)'}")
        out[key] = convert_value(key, val, specs[key].annotation)
    return out


def build(name: str, **params) -> nx.Graph:
    """Build catalog fabric ``name``; string parameter values are parsed as ``--set`` does.

    Examples
    --------
    >>> G = build("jalapeno-rack")
    >>> sum(1 for _, d in G.nodes(data=True) if d["kind"] == "chip")
    128
    """
    fab = _fabric(name)
    kwargs = parse_params(name, params)
    G = fab.builder(**kwargs)
    full = {k: p.default for k, p in param_specs(name).items()}
    full.update(kwargs)
    G.graph.update(name=name, params=json.dumps(full, default=list, sort_keys=True),
                   description=fab.description, source=fab.source)
    G.graph.setdefault("routing", "ecmp")
    return G


def builder_params() -> dict[str, tuple[str, ...]]:
    """Every catalog builder's parameter names (what ``design`` checks a space against)."""
    return {name: tuple(param_specs(name)) for name in sorted(FABRICS)}
