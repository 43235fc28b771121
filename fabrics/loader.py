"""Fabric loading in one place: a catalog name or a fabric file, with ``KEY=VALUE`` overrides.

Every bad input is a one-line :class:`~fabricsim.topo.errors.BadInput` whose ``param`` names what it
is about: the fabric spec (``param`` as the caller names it, ``"fabric"`` by default) or an override
(``"set"``).
"""
from __future__ import annotations

from pathlib import Path

from ..topo.errors import BadInput
from .registry import FABRICS, build, describe, param_specs

__all__ = ["FILE_SUFFIXES", "is_file_spec", "parse_sets", "fabric_sets", "load_fabric", "load_fabrics", "params_table",
           "catalog_text",
           "write_fabrics", "export_format", "export_graph"]

FILE_SUFFIXES = (".toml", ".graphml", ".json")


def _is(spec: str, kind: str) -> bool:
    try:
        return getattr(Path(spec), kind)()
    except (OSError, ValueError):   # a name too long for the file system, or with a NUL: neither
        return False


def is_file_spec(spec: str) -> bool:
    """Whether ``spec`` names a fabric file (by its suffix or because the file exists), not a catalog name."""
    return spec not in FABRICS and (spec.endswith(FILE_SUFFIXES) or _is(spec, "is_file"))


def parse_sets(sets) -> dict[str, str]:
    """``("racks=8", "leaf=static")`` -> ``{"racks": "8", "leaf": "static"}`` (``param="set"`` when malformed)."""
    out = {}
    for item in sets:
        key, eq, val = item.partition("=")
        if not eq or not key.strip():
            raise BadInput(f"{item!r} is not key=value (e.g. --set racks=8)", param="set")
        out[key.strip()] = val.strip()
    return out


def fabric_sets(sets, names) -> dict[str, tuple[str, ...]]:
    """Several fabrics' ``FABRIC:KEY=VALUE`` overrides -> ``{fabric: ("KEY=VALUE", ...)}``; FABRIC must be in names.

    Examples
    --------
    >>> fabric_sets(["torus:dims=8x8x8"], ["nvl72", "torus"])
    {'torus': ('dims=8x8x8',)}
    """
    out: dict[str, tuple[str, ...]] = {}
    for item in sets:
        left, eq, value = item.partition("=")
        fabric, colon, key = left.rpartition(":")   # a file name may hold ':'; a parameter name does not
        fabric, key = fabric.strip(), key.strip()
        if not eq or not colon or not fabric or not key:
            raise BadInput(f"{item[:120]!r} is not FABRIC:KEY=VALUE (e.g. --set torus:dims=8x8x8)", param="set")
        if fabric not in names:
            raise BadInput(f"{fabric[:120]!r} in {item[:120]!r} is not one of --fabrics; choose one "
                           f"of: {', '.join(dict.fromkeys(names))}", param="set")
        out[fabric] = (*out.get(fabric, ()), f"{key}={value}")
    return out


def load_fabric(spec: str, sets=(), *, param: str = "fabric"):
    """A catalog name or a fabric file (.toml, .graphml, .json) -> its graph, ``sets`` (``KEY=VALUE``) applied.

    Parameters
    ----------
    spec : str
        A catalog name (``fabricsim list``) or a fabric file.
    sets : iterable of str or dict
        Parameter overrides, ``"racks=8"`` or ``{"racks": "8"}``.
    param : str
        The parameter ``spec`` came in by, named by the ``BadInput`` a bad spec raises; a bad override of a
        catalog fabric names ``"set"``.

    Raises
    ------
    BadInput
        An unknown fabric, a directory, an unreadable or malformed file, a bad override.
    """
    params = dict(sets) if isinstance(sets, dict) else parse_sets(sets)
    if spec not in FABRICS and _is(spec, "is_dir"):
        raise BadInput(f"{spec!r} is a directory; give a fabric file (.toml, .graphml, .json) or a catalog name",
                       param=param)
    about = "set" if spec in FABRICS and params else param   # a catalog fabric builds; only an override can fail
    try:
        if is_file_spec(spec):
            from .userfile import load_fabric as load_file
            return load_file(spec, **params)
        return build(spec, **params)
    except ValueError as exc:   # BadInput, FabricError or a builder's plain ValueError: one line, named
        if isinstance(exc, BadInput) and exc.param is not None:
            raise
        raise BadInput(str(exc), param=about) from None


def load_fabrics(names, sets=(), *, param: str = "fabrics") -> list[tuple[str, object, dict]]:
    """Several fabrics: ``names`` (a list, or ``"a,b,c"``; ``"all"``: the catalog) with ``FABRIC:KEY=VALUE``
    overrides -> ``[(name, graph, {key: value})]``.  Every name is checked before any fabric is built."""
    names = [n.strip() for n in names.split(",") if n.strip()] if isinstance(names, str) else list(names)
    names = sorted(FABRICS) if names == ["all"] else names
    if not names:
        raise BadInput("no fabrics given", param=param)
    per_fabric = fabric_sets(sets, names)
    for name in names:
        if name not in FABRICS and not is_file_spec(name):
            load_fabric(name, param=param)    # raises: unknown fabric, with the catalog
    return [(n, load_fabric(n, per_fabric.get(n, ()), param="set" if n in per_fabric else param),
             parse_sets(per_fabric.get(n, ()))) for n in names]


def params_table(fabric: str) -> tuple[str, list[list[str]]]:
    """A catalog fabric's one-line description and its parameters as rows: name, default, what it accepts."""
    if is_file_spec(fabric) or (fabric not in FABRICS and _is(fabric, "is_dir")):
        raise BadInput(f"{fabric!r}: params takes a catalog name only (a fabric file's parameters are in the "
                       f"file); choose one of: {', '.join(sorted(FABRICS))}", param="fabric")
    try:
        specs = param_specs(fabric)
    except ValueError as exc:
        raise BadInput(str(exc), param="fabric") from None
    doc = (FABRICS[fabric].builder.__doc__ or "").strip().splitlines()[0]
    return f"{fabric}: {doc}", [[k, str(p.default), describe(p.annotation)] for k, p in specs.items()]


def catalog_text(rows: list[dict]) -> str:
    """The catalog rows (:func:`fabricsim.fabrics.catalog_cache.catalog_rows`) as ``fabricsim list`` prints them."""
    from ..topo.text import table
    short = [d if len(d) <= 90 else d[:89] + "…" for d in (r["description"] for r in rows)]
    return "\n".join([
        table([[r["name"], r["chips"], r["switches"], d] for r, d in zip(rows, short)],
              ["fabric", "chips", "switches", "description"]),
        "\nSources: " + "; ".join(f"{r['name']}: {r['source']}" for r in rows),
        "Inferred (I): " + "; ".join(f"{r['name']}: {r['inferred']}" for r in rows if r["inferred"]),
        "Parameters: fabricsim audit FABRIC --set key=value (see `fabricsim params FABRIC`)."])


def write_fabrics(builder: str, designs, out_dir) -> list[Path]:
    """Build ``builder`` for each design, a pair (params, the same as ``{key: text}``), and write it as a
    node-link JSON fabric file named for its params (``rail-cluster_nic_gbps-400_....json``) into ``out_dir``
    (made if missing)."""
    from .userfile import export_fabric
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    out = []
    for params, text in designs:
        name = "_".join(f"{k}-{v}" for k, v in params.items()).replace("/", "-")
        out.append(export_fabric(build(builder, **text), d / f"{builder}_{name}.json"))
    return out


def export_format(path, fmt: str | None = None) -> str:
    """The export format of ``path`` (``fmt``, else its suffix's): checked before a fabric is built.

    Formats and suffixes are :data:`fabricsim.topo.export_text.EXPORT_FORMATS`'; a ``.json`` file is
    node-link unless ``fmt`` says ``infragraph``.  A suffix the format does not write is refused
    (``param="output"``).
    """
    from ..topo.export_text import EXPORT_FORMATS
    suffix = Path(path).suffix.lower()
    if fmt is not None and fmt not in EXPORT_FORMATS:
        raise BadInput(f"unknown export format {fmt!r}; choose one of: {', '.join(EXPORT_FORMATS)}", param="fmt")
    fmt = fmt or next((f for f, sfx in EXPORT_FORMATS.items() if suffix in sfx), None)
    if fmt is None or suffix not in EXPORT_FORMATS[fmt]:
        wanted = EXPORT_FORMATS[fmt] if fmt else sorted({x for sfx in EXPORT_FORMATS.values() for x in sfx})
        raise BadInput(f"{str(path)!r}: {f'format {fmt} writes' if fmt else 'export writes'} "
                       f"{' or '.join(wanted)} files", param="output")
    return fmt


def export_graph(G, path, fmt: str | None = None):
    """Write ``G`` to ``path`` as ``fmt`` (:func:`export_format`): a fabric file (GraphML, node-link JSON) that
    loads back as FABRIC, ASTRA-sim's network.yml, SimAI's topology or an InfraGraph document.  Returns the
    writer's result (what the mapping kept and lost: :func:`fabricsim.topo.export_text.export_lines` says it)."""
    from ..topo import export as X
    from .userfile import export_fabric
    fmt = export_format(path, fmt)
    write = {"astra-sim": X.write_astra, "simai": X.write_simai, "infragraph": X.write_infragraph}.get(fmt,
                                                                                                   export_fabric)
    return write(G, path)
