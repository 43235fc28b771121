"""A design space: a builder, the values its parameters may take, a workload, objectives.

Read from a TOML file (``fabricsim design SPACE.toml``) or a dict::

    builder = "jalapeno-pod"             # a catalog fabric (its builder's parameters vary)
    [set]                                # fixed parameters (optional), as --set takes them
    trays = 16
    [vary]                               # each parameter: a list of values, or {start, stop, step}
    racks = [4, 8, 16]
    leaf = ["switched", "static"]
    [workload]                           # mix's job tables (group_size, size, collective, ...)
    jobs = [{collective = "all-to-all", group_size = 512, size = "1GiB"}]
    [objectives]
    minimize = ["time_s", "capex_usd"]   # any of OBJECTIVES
    maximize = []
    [constraints]                        # optional: capex_usd_max, power_kw_max, chips_min, ...
    capex_usd_max = 5e7
    # parts = "my_parts.toml"            # optional: override part prices/power (as audit --parts)

Values are given to the builder exactly as ``--set KEY=VALUE`` gives them (a TOML
string, number or boolean; tuples spelled ``"4x4x4"``), so the builder checks them and
a value it refuses makes that one design *refused*, with the builder's reason.
"""
from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Collection, Iterator, Mapping

from ...topo.errors import BadInput, close_matches

__all__ = ["OBJECTIVES", "CONSTRAINTS", "DesignSpace", "space_from_dict", "load_space"]

#: Objective name -> (what it is, the sense it is usually optimised in).
OBJECTIVES = {
    "time_s": ("the workload's makespan (flow-level, every job of [workload] together, as `mix`)", "minimize"),
    "capex_usd": ("the bill of materials' price: chips, switches, NICs, optics, cables, OCS ports", "minimize"),
    "power_kw": ("the bill of materials' power", "minimize"),
    "network_capex_usd": ("capex_usd without the chips: switches, NICs, optics, cables, OCS ports", "minimize"),
    "network_power_kw": ("power_kw without the chips", "minimize"),
    "chips": ("the number of chips", "maximize"),
    "capex_per_chip_usd": ("capex_usd / chips", "minimize"),
    "worst_n1_slowdown": ("the worst single failure's slowdown of the first job (the failure atlas, N-1)",
                          "minimize"),
}

#: Constraint name -> (the figure it bounds, "max" or "min").
CONSTRAINTS = {f"{name}_{end}": (name, end)
               for name in ("capex_usd", "power_kw", "network_capex_usd", "network_power_kw", "chips", "time_s")
               for end in ("max", "min")}

_CHEAP = {"capex_usd", "power_kw", "network_capex_usd", "network_power_kw", "chips",
          "capex_per_chip_usd"}   # known before any solve


def _set_text(value: Any) -> str:
    """A TOML value as ``--set`` spells it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "x".join(str(v) for v in value)
    return str(value)


def _values(name: str, spec: Any, where: str) -> tuple:
    if isinstance(spec, dict):
        unknown = set(spec) - {"start", "stop", "step"}
        if unknown or not {"start", "stop"} <= set(spec):
            raise BadInput(f"{where}: [vary] {name} = {spec!r}; a range is {{start, stop, step}} (stop included)")
        start, stop, step = spec["start"], spec["stop"], spec.get("step", 1)
        nums = (start, stop, step)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in nums) \
                or step <= 0 or stop < start:
            raise BadInput(f"{where}: [vary] {name} = {spec!r}; need finite numbers, step > 0, stop >= start")
        span = (stop - start) / step + 1e-9    # inf for a denormal step or a span past 1.8e308
        if not math.isfinite(span):
            raise BadInput(f"{where}: [vary] {name} range has more values than a float can count "
                           f"((stop - start) / step overflows); at most 100,000")
        n = int(math.floor(span)) + 1
        if n > 100_000:
            raise BadInput(f"{where}: [vary] {name} range has {n:,} values; at most 100,000")
        vals = [start + i * step for i in range(n)]
        return tuple(int(v) if all(isinstance(x, int) for x in nums) else v for v in vals)
    if not isinstance(spec, list) or not spec:
        raise BadInput(f"{where}: [vary] {name} = {spec!r}; give a non-empty list of values or {{start, stop, step}}")
    if len(set(map(_set_text, spec))) != len(spec):
        raise BadInput(f"{where}: [vary] {name} lists a value twice")
    return tuple(spec)


@dataclass(frozen=True)
class DesignSpace:
    """What ``design`` searches: every combination of ``vary`` on top of ``fixed``."""

    builder: str
    vary: dict = field(default_factory=dict)          # parameter -> tuple of values
    fixed: dict = field(default_factory=dict)         # parameter -> value
    jobs: tuple = ()                                  # mix job tables (dicts)
    minimize: tuple = ("time_s", "capex_usd")
    maximize: tuple = ()
    constraints: dict = field(default_factory=dict)   # CONSTRAINTS name -> bound
    base: str = "."                                   # the spec's folder (for job files)
    parts: Any = None                                 # a parts override (path or table) for the BOM

    @property
    def size(self) -> int:
        """How many designs the space holds."""
        return math.prod(len(v) for v in self.vary.values())

    @property
    def objectives(self) -> tuple[str, ...]:
        return tuple(self.minimize) + tuple(self.maximize)

    def designs(self) -> Iterator[dict]:
        """Every combination of the varied parameters (fixed ones excluded), in a fixed order."""
        names = list(self.vary)
        for combo in itertools.product(*(self.vary[n] for n in names)):
            yield dict(zip(names, combo))

    def params_text(self, design: dict) -> dict[str, str]:
        """The builder's parameters of one design, as ``--set`` strings."""
        return {k: _set_text(v) for k, v in {**self.fixed, **design}.items()}

    def key(self, design: dict) -> str:
        """A stable text key of one design (the cache and resume key)."""
        return json.dumps(self.params_text(design), sort_keys=True)

    def as_dict(self) -> dict[str, Any]:
        return {"builder": self.builder, "vary": {k: list(v) for k, v in self.vary.items()},
                "set": dict(self.fixed), "workload": {"jobs": [dict(j) for j in self.jobs]},
                "objectives": {"minimize": list(self.minimize), "maximize": list(self.maximize)},
                "constraints": dict(self.constraints),
                **({"parts": self.parts} if self.parts is not None else {})}


def space_from_dict(data: dict, where: str = "<design space>", base: str | Path = ".", *,
                    builders: Mapping[str, Collection[str]] | None = None) -> DesignSpace:
    """Check and build a :class:`DesignSpace` from a TOML-shaped dict (one-line ``BadInput`` on any fault).

    ``builders`` maps each builder name to its parameter names (the CLI passes the
    catalog's, :func:`fabricsim.fabrics.registry.builder_params`); with it an unknown builder
    or parameter is refused here, without it the builder refuses it when a design is built.
    """
    if not isinstance(data, dict):
        raise BadInput(f"{where}: expected a table, got {type(data).__name__}")
    known = {"builder", "vary", "set", "workload", "objectives", "constraints", "parts"}
    extra = sorted(set(data) - known)
    if extra:
        raise BadInput(f"{where}: unknown key {extra[0]!r}{close_matches(extra[0], known)}; "
                       f"valid keys: {', '.join(sorted(known))}")
    builder = data.get("builder")
    if not isinstance(builder, str) or (builders is not None and builder not in builders):
        choices = sorted(builders or ())
        raise BadInput(f"{where}: builder = {builder!r}{close_matches(str(builder), choices)}; "
                       f"a catalog fabric name (`fabricsim list`)")
    params = set(builders[builder]) if builders is not None else None
    vary_in, fixed = data.get("vary", {}), data.get("set", {})
    if not isinstance(vary_in, dict) or not vary_in:
        raise BadInput(f"{where}: [vary] is missing or empty; name at least one parameter of {builder!r} "
                       f"({', '.join(sorted(params or ()))})")
    if not isinstance(fixed, dict):
        raise BadInput(f"{where}: [set] must be a table")
    for name in list(vary_in) + list(fixed):
        if params is not None and name not in params:
            raise BadInput(f"{where}: {builder!r} has no parameter {name!r}{close_matches(name, params)}; "
                           f"its parameters: {', '.join(sorted(params))}")
    both = set(vary_in) & set(fixed)
    if both:
        raise BadInput(f"{where}: {sorted(both)[0]!r} is both in [vary] and [set]")
    vary = {name: _values(name, spec, where) for name, spec in vary_in.items()}
    size = math.prod(len(v) for v in vary.values())
    if size > 10_000_000:
        raise BadInput(f"{where}: the space holds {size:,} designs; at most 10,000,000")
    wl = data.get("workload", {})
    jobs = wl.get("jobs") if isinstance(wl, dict) else None
    if not isinstance(jobs, list) or not jobs or not all(isinstance(j, dict) for j in jobs):
        raise BadInput(f"{where}: [workload] jobs = [...] is missing; e.g. "
                       'jobs = [{collective = "all-reduce", group_size = 8, size = "1GiB"}]')
    jobs = tuple({"name": j.get("name", f"job{i}"), **j} for i, j in enumerate(jobs))
    obj = data.get("objectives", {"minimize": ["time_s", "capex_usd"]})
    if not isinstance(obj, dict) or set(obj) - {"minimize", "maximize"}:
        raise BadInput(f"{where}: [objectives] takes minimize = [...] and maximize = [...]")
    minimize, maximize = tuple(obj.get("minimize", ())), tuple(obj.get("maximize", ()))
    names = minimize + maximize
    if not names:
        raise BadInput(f"{where}: [objectives] names none; choose from: {', '.join(OBJECTIVES)}")
    for name in names:
        if name not in OBJECTIVES:
            raise BadInput(f"{where}: objective {name!r}{close_matches(str(name), OBJECTIVES)}; "
                           f"choose from: {', '.join(OBJECTIVES)}")
    if len(set(names)) != len(names):
        raise BadInput(f"{where}: an objective is named twice")
    cons = data.get("constraints", {})
    if not isinstance(cons, dict):
        raise BadInput(f"{where}: [constraints] must be a table")
    for name, bound in cons.items():
        if name not in CONSTRAINTS:
            raise BadInput(f"{where}: constraint {name!r}{close_matches(name, CONSTRAINTS)}; "
                           f"choose from: {', '.join(CONSTRAINTS)}")
        if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not math.isfinite(bound):
            raise BadInput(f"{where}: constraint {name} = {bound!r}; expected a finite number")
    parts = data.get("parts")
    if parts is not None:
        from ...topo.parts import load_parts
        if isinstance(parts, str) and not Path(parts).is_absolute():
            parts = str(Path(base) / parts)
        if not isinstance(parts, (str, dict)):
            raise BadInput(f"{where}: parts = {parts!r}; a parts TOML path or an inline table like audit --parts")
        load_parts(parts)                             # checked now, one line if malformed
    return DesignSpace(builder=builder, vary=vary, fixed=dict(fixed), jobs=jobs, minimize=minimize,
                       maximize=maximize, constraints=dict(cons), base=str(base), parts=parts)


def load_space(path: str | Path, *, builders: Mapping[str, Collection[str]] | None = None) -> DesignSpace:
    """Read a design space TOML (see the module notes); ``builders`` as :func:`space_from_dict`."""
    import tomllib
    from ...topo.inputs import read_input_text
    p = Path(path)
    text = read_input_text(p, "a design space TOML file")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{path}: {exc}") from None
    return space_from_dict(data, str(path), base=p.parent, builders=builders)
