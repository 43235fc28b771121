"""A user's own fabric: a TOML recipe for a generic builder, or a GraphML / node-link JSON graph.

``load_fabric(path, **overrides)`` reads

* ``*.toml``: a recipe naming a builder of :mod:`fabricsim.topo.builders` and its
  parameters::

      name = "my-torus"                 # optional (default: the file name)
      description = "4x4 test torus"    # optional
      source = "my notes"               # optional
      accelerator = "tpu-v5p"           # optional: the chips' roofline entry (topo/accelerators.toml)
      builder = "torus"
      [params]
      dims = [4, 4]
      lanes_per_link = 2

  Keyword ``overrides`` replace ``[params]`` entries.  String values, in the file and in
  ``overrides`` alike (``dims = "8x8"``, ``"true"``, ``"2"``), are converted by the parameter's
  annotation with :func:`fabricsim.fabrics.registry.convert_value`, as ``--set`` does.
* ``*.graphml`` (``networkx.read_graphml``) and ``*.json`` (node-link, edges under
  ``"edges"``): any graph that passes :func:`fabricsim.topo.contract.validate`.

Every loaded graph is validated.  A malformed file raises
:class:`fabricsim.topo.errors.BadInput` naming the file, the place (line and column,
key, or graph element) and the reason.

``export_fabric(G, path)`` writes GraphML or node-link JSON by the extension; the file
loads back with the same attribute types (ints stay ints, bools bools) and passes
``validate``.  Node ids are written as strings; a graph with non-string ids (tuples) is
relabelled ``str(id)`` first.
"""
from __future__ import annotations

import inspect
import json
import os
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import networkx as nx

from ..topo.builders import BUILDERS
from ..topo.contract import validate
from ..topo.errors import BadInput
from .registry import convert_value

__all__ = ["load_fabric", "export_fabric", "FORMATS"]

FORMATS = (".toml", ".graphml", ".json")
TOML_KEYS = ("builder", "params", "name", "description", "source", "accelerator")
_SHOW = 5  # contract violations quoted in a message


def _short(path) -> str:
    """A path for a one-line message: names past 120 characters are cut in the middle."""
    s = str(path)
    return s if len(s) <= 120 else f"{s[:60]}...{s[-40:]} ({len(s):,} characters)"


def _suffix(path: Path, *, allowed=FORMATS) -> str:
    suffix = path.suffix.lower()
    if suffix not in allowed:
        raise BadInput(f"{_short(path)}: unknown file type {suffix or '(none)'!r}; use one of: {', '.join(allowed)}")
    return suffix


def _load_toml(path: Path, overrides: dict[str, Any]) -> nx.Graph:
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{path}: {exc}") from None  # tomllib's message carries "(at line L, column C)"
    except RecursionError:
        raise BadInput(f"{path}: nested too deeply to be a fabric recipe") from None
    unknown = sorted(set(doc) - set(TOML_KEYS))
    if unknown:
        raise BadInput(f"{path}: unknown key {unknown[0]!r}; valid keys: {', '.join(TOML_KEYS)}")
    if "builder" not in doc:
        raise BadInput(f"{path}: missing key 'builder'; choose one of: {', '.join(BUILDERS)}")
    if "accelerator" in doc:   # checked here so a typo fails at load, naming the catalog's choices
        from .accelerators import accelerator
        try:
            accelerator(doc["accelerator"] if isinstance(doc["accelerator"], str) else repr(doc["accelerator"]))
        except BadInput as exc:
            raise BadInput(f"{path}: {exc}") from None
    name = doc["builder"]
    if not isinstance(name, str) or name not in BUILDERS:
        raise BadInput(f"{path}: builder = {name!r} is not a builder; choose one of: {', '.join(BUILDERS)}")
    params = doc.get("params", {})
    if not isinstance(params, dict):
        raise BadInput(f"{path}: 'params' must be a table ([params]), not {type(params).__name__}")
    fn = BUILDERS[name]
    sig = inspect.signature(fn, eval_str=True).parameters
    for key in list(params) + list(overrides):
        if key not in sig:
            where = "[params]" if key in params else "override"
            raise BadInput(f"{path}: {where} {key!r} is not a parameter of {name}; "
                           f"valid: {', '.join(sig)}")
    merged = {**params, **overrides}
    try:   # strings in the file and in overrides alike are read as --set reads them ("8x8x8", "true", "2")
        merged = {k: convert_value(k, v, sig[k].annotation) for k, v in merged.items()}
    except BadInput as exc:
        raise BadInput(f"{path}: {exc}") from None
    missing = [k for k, p in sig.items() if p.default is inspect.Parameter.empty and k not in merged]
    if missing:
        raise BadInput(f"{path}: [params] is missing {', '.join(map(repr, missing))} required by {name}")
    # dims (the torus) is positional; TOML arrays arrive as lists, which the builders accept
    positional = [k for k, p in sig.items() if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    try:
        G = fn(*[merged[k] for k in positional if k in merged],
               **{k: v for k, v in merged.items() if k not in positional})
    except (TypeError, ValueError) as exc:
        raise BadInput(f"{path}: [params]: {exc}") from None
    G.graph.update(name=str(doc.get("name", path.stem)), builder=name,
                   params=json.dumps(merged, default=list, sort_keys=True),
                   description=str(doc.get("description", f"{name} from {path.name}")),
                   source=str(doc.get("source", str(path))))
    if "accelerator" in doc:
        G.graph["accelerator"] = doc["accelerator"]
    return G


def _load_graphml(path: Path) -> nx.Graph:
    try:
        G = nx.read_graphml(path)
    except ET.ParseError as exc:
        line, col = exc.position
        raise BadInput(f"{path}: line {line}, column {col}: malformed XML ({exc})") from None
    except (nx.NetworkXError, KeyError, ValueError, TypeError) as exc:
        raise BadInput(f"{path}: not a readable GraphML graph: {exc}") from None
    for key in ("node_default", "edge_default"):  # read_graphml's own bookkeeping, not graph data
        if not G.graph.get(key, True):
            del G.graph[key]
    return G


def _load_json(path: Path) -> nx.Graph:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{path}: line {exc.lineno}, column {exc.colno}: malformed JSON ({exc.msg})") from None
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: byte {exc.start}: not UTF-8 text") from None
    except RecursionError:
        raise BadInput(f"{path}: nested too deeply to be a node-link graph") from None
    if not isinstance(data, dict):
        raise BadInput(f"{path}: top level must be a node-link object, not {type(data).__name__}")
    if not isinstance(data.get("graph", {}), dict):
        raise BadInput(f"{path}: node-link key 'graph' must be an object of graph attributes, "
                       f"not {type(data['graph']).__name__}")
    for key in ("nodes", "edges"):
        if not isinstance(data.get(key), list):
            raise BadInput(f"{path}: node-link key {key!r} must be a list"
                           + (" (this file uses 'links'; export with edges='edges')" if "links" in data else ""))
    for i, n in enumerate(data["nodes"]):
        if not isinstance(n, dict) or "id" not in n:
            raise BadInput(f"{path}: nodes[{i}] has no 'id'")
        if not isinstance(n["id"], (str, int)):
            raise BadInput(f"{path}: nodes[{i}] id {n['id']!r} must be a string or integer")
    ids: set = set()
    for i, n in enumerate(data["nodes"]):
        if n["id"] in ids:
            raise BadInput(f"{path}: nodes[{i}] repeats id {n['id']!r}; each node once")
        ids.add(n["id"])
    pairs: dict = {}
    for i, e in enumerate(data["edges"]):
        if not isinstance(e, dict) or "source" not in e or "target" not in e:
            raise BadInput(f"{path}: edges[{i}] needs 'source' and 'target'")
        try:
            pair = frozenset((e["source"], e["target"]))
        except TypeError:
            raise BadInput(f"{path}: edges[{i}] source/target must be node ids (strings or integers)") from None
        if pair in pairs:
            # networkx would merge the two silently; one edge is one bundle, so say which
            raise BadInput(f"{path}: edges[{i}] repeats the edge {e['source']!r} -- {e['target']!r} of "
                           f"edges[{pairs[pair]}]; give one edge per bundle (sum the lanes)")
        pairs[pair] = i
    try:
        return nx.node_link_graph(data, edges="edges")
    except (nx.NetworkXError, KeyError, TypeError, ValueError) as exc:
        raise BadInput(f"{path}: not a node-link graph: {exc}") from None


def load_fabric(path: str | os.PathLike, **overrides) -> nx.Graph:
    """Load a user's fabric from a TOML recipe, GraphML or node-link JSON file.

    Parameters
    ----------
    path : str or path-like
        ``*.toml``, ``*.graphml`` or ``*.json``.
    **overrides
        Builder parameters replacing the recipe's ``[params]`` (TOML only).

    Returns
    -------
    networkx.Graph
        A graph that passes :func:`~fabricsim.topo.contract.validate`; ``G.graph["name"]``
        defaults to the file name (stem).

    Raises
    ------
    BadInput
        The file is missing, malformed, names an unknown builder or parameter, or the
        graph breaks the contract; the message names the file, the place and the reason.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.toml"
    >>> _ = p.write_text('builder = "torus"\\n[params]\\ndims = [4, 4]\\n')
    >>> load_fabric(p).graph["dims"], load_fabric(p, dims="2x3").number_of_nodes()
    ('4x4', 6)
    """
    path = Path(path)
    suffix = _suffix(path)
    try:
        is_file = path.is_file()
    except OSError as exc:    # e.g. a name longer than the file system allows
        raise BadInput(f"{_short(path)}: {exc.strerror or exc}") from None
    if not is_file:
        raise BadInput(f"{_short(path)}: no such file")
    if suffix == ".toml":
        G = _load_toml(path, overrides)
    else:
        if overrides:
            raise BadInput(f"{path}: parameters ({', '.join(overrides)}) apply only to .toml recipes, "
                           f"not to a stored graph")
        G = _load_graphml(path) if suffix == ".graphml" else _load_json(path)
        G.graph.setdefault("name", path.stem)
        _register_gpu_nic_models(G)
    return check_contract(G, path)


def check_contract(G: nx.Graph, path) -> nx.Graph:
    """``G`` if it follows the graph contract, else one ``BadInput`` line quoting the first violations."""
    bad = validate(G)
    if bad:
        shown = "; ".join(map(str, bad[:_SHOW]))
        more = f" (and {len(bad) - _SHOW} more)" if len(bad) > _SHOW else ""
        raise BadInput(f"{path}: {len(bad)} contract violation{'s' * (len(bad) > 1)}: {shown}{more}")
    return G


def _register_gpu_nic_models(G: nx.Graph) -> None:
    """Register the ``"<gpu>+<nic>"`` chip devices a stored graph names (they exist only once built).

    A catalog cluster's chips are GPU-with-NIC devices that :func:`fabricsim.fabrics.devices.gpu_with_nic`
    registers while building; a file exported from one names them, so a fresh process must register them
    before validating.  Unknown parts are left for ``validate`` to report.
    """
    from ..topo.devices import DEVICES
    from .devices import NICS, gpu_with_nic
    # only string models (an unhashable one is validate's to report, in one line)
    for model in {d.get("model") for _, d in G.nodes(data=True) if isinstance(d.get("model"), str)}:
        if model not in DEVICES and "+" in model:
            gpu, _, nic = model.rpartition("+")
            if gpu in DEVICES and nic in NICS:
                gpu_with_nic(gpu, nic)


def _check_scalars(G: nx.Graph) -> None:
    scalar = (str, int, float, bool)

    def check(where, data):
        for k, v in data.items():
            if not isinstance(v, scalar):
                raise BadInput(f"{where}: attribute {k!r} = {v!r} is not a scalar (str, int, float, bool); "
                               f"the contract keeps attributes scalar so files round-trip")
    check("graph", G.graph)
    for n, d in G.nodes(data=True):
        check(str(n), d)
    for u, v, d in G.edges(data=True):
        check(f"{u} -- {v}", d)


def export_fabric(G: nx.Graph, path: str | os.PathLike) -> Path:
    """Write ``G`` as GraphML (``.graphml``) or node-link JSON (``.json``); return the path.

    The file loads back with :func:`load_fabric` into a graph with the same nodes, edges and
    attribute types.  Non-string node ids are written as ``str(id)``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from fabricsim.fabrics import build
    >>> p = export_fabric(build("nvl72"), pathlib.Path(tempfile.mkdtemp()) / "nvl72.graphml")
    >>> H = load_fabric(p)
    >>> H.number_of_edges(), type(H.nodes["gpu05"]["rank"]).__name__
    (1296, 'int')
    """
    path = Path(path)
    suffix = _suffix(path, allowed=(".graphml", ".json"))
    _check_scalars(G)
    if any(not isinstance(n, str) for n in G):
        G = nx.relabel_nodes(G, {n: str(n) for n in G})
    if suffix == ".graphml":
        nx.write_graphml(G, path)
    else:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(nx.node_link_data(G, edges="edges"), fh, indent=1)
    return path
