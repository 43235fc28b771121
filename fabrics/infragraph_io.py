"""InfraGraph in: an InfraGraph document (ASTRA-sim 3.0's infrastructure description) as a fabric graph.

``read_infragraph(path)`` reads a JSON or YAML file holding either an InfraGraph ``Infrastructure``
(devices, instances, links, edges) or the service's infragraph response
``{"infrastructure": ..., "annotations": ...}`` (the shape :func:`fabricsim.topo.export.write_infragraph`
writes).  The ``infragraph`` package (``pip install 'fabricsim[infragraph]'``) checks the schema and
expands the document into its component graph (``instance.i.component.j`` nodes, slices and
many2many / one2one edge schemes resolved by the package's own service), the annotations are applied
by the same service, and then:

* ``xpu`` components become chips and ``switch`` components switches;
* ``nic`` and ``port`` components are pass-through: a chain chip - nic - port - switch becomes one
  bundle whose capacity is the chain's narrowest link and whose latency is the chain's sum;
* a switch without a ``role`` annotation takes its InfraGraph device's name as its role;
* ``cpu``, ``memory``, ``custom`` and ``device`` components are dropped (listed in ``G.graph["notes"]``).

A file written by fabricsim carries every attribute as an annotation, with the types in the graph
annotation ``fabricsim.types``; it reads back into the graph it was written from.  A foreign file
needs a ``model`` annotation (a device-catalog key) on its xpu and switch nodes; the contract's other
bundle fields (lanes, lane rate, medium, tier) default to one lane at the link's rate, ``copper``
and the link's name, and the defaults are listed in ``G.graph["inferred"]``.

A malformed or unsupported file raises :class:`~fabricsim.topo.errors.BadInput` in one line naming
the file and the element.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import networkx as nx

from ..topo.contract import (CAPACITY_GBPS, CHIP, DOMAIN_TAGS, KIND, LANE_GBPS, LANES, LATENCY_NS, MEDIUM,
                             PORT_GBPS, RANK, SWITCH, TIER)
from ..topo.errors import BadInput
from ..topo.export import INFRAGRAPH_ANNOTATION

__all__ = ["read_infragraph", "SUFFIXES"]

SUFFIXES = (".json", ".yaml", ".yml")
KEEP = {"xpu": CHIP, "switch": SWITCH}          # InfraGraph component type -> fabricsim kind
PASS_THROUGH = ("nic", "port")                   # joined through: a chip's NIC, a switch's port
# the service's own node and edge attributes (InfraGraphService._IMMUTABLE_ATTRIBUTES and its link strings)
_SERVICE_NODE = ("type", "instance", "instance_idx", "device", "composed_device")
_SERVICE_EDGE = ("link", "bandwidth", "latency")
# InfraGraph units -> Gb/s and ns (F: infragraph.proto LinkPhysicalBandwidth / LinkPhysicalLatency; the service
# writes them as "<value> <unit>" with these short forms, InfraGraphService._UNIT_ABBREVIATIONS)
_GBPS_PER = {"Gbps": 1.0, "GBps": 8.0}           # D: 1 GB/s = 8 Gb/s
_NS_PER = {"ns": 1.0, "us": 1e3, "ms": 1e6}       # D
# attribute types of the graph contract, for files that carry no fabricsim.types annotation
_CONTRACT_TYPES = {**{k: "int" for k in (RANK, LANES, "asics", "x", "y", "z", "w", "circuit_lanes",
                                         *DOMAIN_TAGS)},
                   **{k: "float" for k in (LANE_GBPS, PORT_GBPS, CAPACITY_GBPS, LATENCY_NS)},
                   **{k: "bool" for k in ("forwards", "reduces", "wrap")}}


def _one_line(exc: BaseException) -> str:
    return re.sub(r"\s+", " ", str(exc)).strip() or type(exc).__name__


def _decode(value, t: str, where: str):
    """An annotation string back to its type ``t`` (``str``, ``int``, ``float``, ``bool``, ``json``)."""
    if not isinstance(value, str):
        return value
    try:
        if t == "int":
            return int(value)
        if t == "float":
            return float(value)
        if t == "bool":
            if value.lower() not in ("true", "false"):
                raise ValueError(f"{value!r} is not true or false")
            return value.lower() == "true"
        if t == "json":
            return json.loads(value)
    except ValueError as exc:
        raise BadInput(f"{where}: {_one_line(exc)} (expected {t})") from None
    return value


def _load_doc(path: Path) -> dict:
    text_err = None
    from ..topo.inputs import read_input_text
    raw = read_input_text(path, "an InfraGraph YAML or JSON file")
    if path.suffix.lower() == ".json":
        try:
            doc = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise BadInput(f"{path}: line {exc.lineno}, column {exc.colno}: malformed JSON ({exc.msg})") from None
        except RecursionError:
            raise BadInput(f"{path}: nested too deeply to be an InfraGraph document") from None
    else:
        import yaml
        try:
            doc = yaml.safe_load(raw)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark
            text_err = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
            raise BadInput(f"{path}: {text_err}malformed YAML ({exc.problem})") from None
        except (yaml.YAMLError, RecursionError) as exc:
            raise BadInput(f"{path}: malformed YAML ({_one_line(exc)})") from None
    if not isinstance(doc, dict):
        raise BadInput(f"{path}: top level must be an InfraGraph Infrastructure object or "
                       f"{{infrastructure, annotations}}, not {type(doc).__name__}")
    return doc


def _check_schema(path: Path, cls, data, what: str, lists: tuple):
    """Deserialize with the package's model; on failure, name the first element that fails alone."""
    try:
        return cls().deserialize(data)
    except Exception as exc:  # the package raises TypeError / ValueError / TypeError subclasses
        import infragraph
        for key in lists:
            items = data.get(key) if isinstance(data, dict) else None
            if not isinstance(items, list):
                continue
            item_cls = {"devices": infragraph.Device, "links": infragraph.Link, "instances": infragraph.Instance,
                        "edges": infragraph.InfrastructureEdge, "nodes": infragraph.AnnotationNode,
                        "graph": infragraph.AnnotationAttribute}.get(key)
            if item_cls is None:
                continue
            for i, item in enumerate(items):
                try:
                    item_cls().deserialize(item)
                except Exception as inner:
                    raise BadInput(f"{path}: {what}.{key}[{i}]: {_one_line(inner)}") from None
        raise BadInput(f"{path}: {what}: {_one_line(exc)}") from None


def _service_graph(path: Path, doc: dict) -> nx.Graph:
    try:
        import infragraph
        from infragraph.infragraph_service import InfraGraphService
    except ImportError:
        raise BadInput("import infragraph needs the infragraph package: pip install 'fabricsim[infragraph]'") \
            from None
    if "infrastructure" in doc:
        unknown = sorted(set(doc) - {"infrastructure", "annotations"})
        if unknown:
            raise BadInput(f"{path}: unknown key {unknown[0]!r}; valid keys: infrastructure, annotations")
        infra_d, ann_d = doc["infrastructure"], doc.get("annotations") or {}
    else:
        infra_d, ann_d = doc, {}
    for what, d in (("infrastructure", infra_d), ("annotations", ann_d)):
        if not isinstance(d, dict):
            raise BadInput(f"{path}: {what} must be an object, not {type(d).__name__}")
    infra = _check_schema(path, infragraph.Infrastructure, infra_d, "infrastructure",
                          ("devices", "links", "instances", "edges"))
    ann = _check_schema(path, infragraph.Annotation, ann_d, "annotations", ("nodes", "edges", "links", "graph"))
    service = InfraGraphService()
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # unconnected components: reported below as dropped
            service.set_graph(infra)
            service.annotate_graph(ann)
    except RecursionError:
        raise BadInput(f"{path}: infrastructure: devices nest in a cycle") from None
    except Exception as exc:  # the service raises InfrastructureError, GraphError, ValueError, KeyError ...
        raise BadInput(f"{path}: infrastructure: {type(exc).__name__}: {_one_line(exc)}") from None
    return service.get_networkx_graph()


def _quantity(path, where: str, text, table: dict, what: str) -> float:
    """``"800.0 Gbps"`` -> 800.0 in the table's unit."""
    parts = str(text).split()
    if len(parts) != 2 or parts[1] not in table:
        raise BadInput(f"{path}: {where}: {what} {text!r} is not in {', '.join(table)}")
    try:
        value = float(parts[0])
    except ValueError:
        raise BadInput(f"{path}: {where}: {what} {text!r} is not a number") from None
    return value * table[parts[1]]


def read_infragraph(path: str | os.PathLike) -> nx.Graph:
    """Read an InfraGraph document (JSON or YAML) into a fabric graph that passes the contract.

    Parameters
    ----------
    path : str or path-like
        ``*.json``, ``*.yaml`` or ``*.yml``: an InfraGraph ``Infrastructure`` or
        ``{"infrastructure": ..., "annotations": ...}``.

    Returns
    -------
    networkx.Graph
        Chips and switches with the contract's attributes; ``G.graph["source"]`` is the file.

    Raises
    ------
    BadInput
        One line naming the file and the element: malformed JSON/YAML, a schema error (the
        ``infragraph`` package's), an edge the service cannot expand, a link without a
        bandwidth, a chip or switch without a catalog ``model``, or a contract violation.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from fabricsim.fabrics import build
    >>> from fabricsim.topo.export import write_infragraph
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "mi355x.json"
    >>> _ = write_infragraph(build("mi355x"), p)
    >>> G = read_infragraph(p)
    >>> G.number_of_nodes(), G.number_of_edges(), G.graph["name"]
    (8, 28, 'mi355x')
    """
    path = Path(path)
    if path.suffix.lower() not in SUFFIXES:
        raise BadInput(f"{path}: unknown file type {path.suffix or '(none)'!r}; use one of: {', '.join(SUFFIXES)}")
    if not path.is_file():
        raise BadInput(f"{path}: no such file")
    H = _service_graph(path, _load_doc(path))
    types_raw = H.graph.get(f"{INFRAGRAPH_ANNOTATION}.types")
    types = {"graph": {}, "node": {}, "edge": {}}
    if types_raw is not None:
        try:
            types = json.loads(types_raw)
            assert isinstance(types, dict) and all(isinstance(types.get(k, {}), dict) for k in types)
        except (ValueError, AssertionError):
            raise BadInput(f"{path}: annotations.graph {INFRAGRAPH_ANNOTATION}.types is not a JSON object of "
                           f"types") from None
    ours = types_raw is not None

    def typed(place: str, key: str, value, where: str):
        if not isinstance(key, str):        # a YAML key such as ~ or 3 (hypothesis found a cut file giving None)
            raise BadInput(f"{path}: {where}: attribute name {key!r} is not text")
        t = types.get(place, {}).get(key) or _CONTRACT_TYPES.get(key, "str")
        return _decode(value, t, f"{path}: {where}: {key}")

    G = nx.Graph()
    skip = (f"{INFRAGRAPH_ANNOTATION}.types", f"{INFRAGRAPH_ANNOTATION}.notes")
    for k, v in H.graph.items():
        if k not in skip:
            G.graph[k] = typed("graph", k, v, "annotations.graph")
    # nodes: keep xpu and switch components, join through nic and port, drop the rest
    name_of, kept, through, dropped = {}, [], set(), {}
    for n, d in H.nodes(data=True):
        t = d.get("type")
        if t in KEEP:
            kept.append(n)
        elif t in PASS_THROUGH:
            through.add(n)
        else:
            dropped[t] = dropped.get(t, 0) + 1
    if not kept:
        raise BadInput(f"{path}: infrastructure: no xpu or switch components; nothing to price")

    def order_key(n):
        o = H.nodes[n].get(f"{INFRAGRAPH_ANNOTATION}.order")
        return (0, int(o)) if o is not None and str(o).isdigit() else (1, 0)
    kept.sort(key=order_key)      # a fabricsim file: the original node order; else the service's order
    inferred = []
    for i, n in enumerate(kept):
        d = H.nodes[n]
        nid = d.get(f"{INFRAGRAPH_ANNOTATION}.id", n)
        if nid in G:
            raise BadInput(f"{path}: annotations.nodes {n}: {INFRAGRAPH_ANNOTATION}.id {nid!r} repeats another "
                           f"node's id")
        name_of[n] = nid
        attrs = {k: typed("node", k, v, f"node {n}") for k, v in d.items()
                 if k not in _SERVICE_NODE and not str(k).startswith(f"{INFRAGRAPH_ANNOTATION}.")}
        attrs.setdefault(KIND, KEEP[d["type"]])
        if attrs[KIND] != KEEP[d["type"]]:
            raise BadInput(f"{path}: node {n}: kind {attrs[KIND]!r} but an InfraGraph {d['type']} component")
        if "model" not in attrs:
            from ..topo.devices import DEVICES
            kinds = sorted(m for m, dev in DEVICES.items() if getattr(dev, "kind", None) == attrs[KIND]) or \
                sorted(DEVICES)
            raise BadInput(f"{path}: node {n}: no 'model' annotation; annotate its {d['type']} with a device-catalog "
                           f"model, one of: {', '.join(kinds[:12])}{' ...' if len(kinds) > 12 else ''}")
        attrs.setdefault("forwards", attrs[KIND] == SWITCH)
        if attrs[KIND] == SWITCH and "role" not in attrs:
            attrs["role"] = str(d.get("device", "switch"))
            inferred.append("switch roles = their InfraGraph device names")
        if attrs[KIND] == CHIP and RANK not in attrs:
            attrs[RANK] = sum(1 for m in G if G.nodes[m][KIND] == CHIP)
            if not inferred or "rank" not in inferred[-1]:
                inferred.append("chip ranks in the file's node order")
        G.add_node(nid, **attrs)
    # bundles: each edge between kept nodes, and each chain through nic/port components
    for u, v, d in H.edges(data=True):
        if u in name_of and v in name_of:
            _add_bundle(path, G, name_of[u], name_of[v], [(u, v, d)], typed, inferred)
    if through:
        T = H.subgraph(through)
        for comp in nx.connected_components(T):
            ends = [(a, b) for a in comp for b in H[a] if b in name_of]
            if len(ends) > 2 or len({b for _, b in ends}) != len(ends):
                continue   # a NIC or port shared by more than two endpoints is not one bundle: skip it
            if len(ends) == 2:
                (a1, b1), (a2, b2) = ends
                chain = nx.shortest_path(T, a1, a2)
                hops = [(b1, a1, H.edges[b1, a1])] + [(x, y, H.edges[x, y]) for x, y in zip(chain, chain[1:])] \
                    + [(a2, b2, H.edges[a2, b2])]
                _add_bundle(path, G, name_of[b1], name_of[b2], hops, typed, inferred)
    notes = []
    if dropped:
        notes.append("dropped InfraGraph components (not chips or switches): "
                     + ", ".join(f"{n} {t}" for t, n in sorted(dropped.items(), key=str)))
    G.graph.setdefault("name", path.stem)
    G.graph.setdefault("source", str(path))   # a fabricsim file keeps the figures' provenance
    if not ours:
        G.graph.setdefault("description", f"InfraGraph {path.name}")
        G.graph.setdefault("routing", "ecmp")
        if inferred:
            G.graph["inferred"] = "; ".join(dict.fromkeys(inferred))
        if notes:
            G.graph["notes"] = "; ".join(notes)
    from .userfile import _register_gpu_nic_models, check_contract
    _register_gpu_nic_models(G)      # "<gpu>+<nic>" chips (rail clusters) exist once registered, as for GraphML
    return check_contract(G, path)


def _add_bundle(path, G, a, b, hops, typed, inferred) -> None:
    """One bundle a -- b from the service edges ``hops`` (one edge, or a chain through nic/port nodes)."""
    where = f"edge {hops[0][0]} -- {hops[-1][1]}"
    if G.has_edge(a, b):
        raise BadInput(f"{path}: {where}: a second bundle between {a} and {b}; give one edge per bundle")
    attrs: dict = {}
    if len(hops) == 1:
        attrs = {k: typed("edge", k, v, where) for k, v in hops[0][2].items() if k not in _SERVICE_EDGE}
    caps, lats = [], []
    for x, y, d in hops:
        if d.get("bandwidth") is not None:
            caps.append(_quantity(path, f"edge {x} -- {y} (link {d.get('link')})", d["bandwidth"], _GBPS_PER,
                                  "bandwidth"))
        if d.get("latency") is not None:
            lats.append(_quantity(path, f"edge {x} -- {y} (link {d.get('link')})", d["latency"], _NS_PER, "latency"))
    if CAPACITY_GBPS not in attrs:
        if not caps:
            raise BadInput(f"{path}: {where}: link {hops[0][2].get('link')!r} has no physical bandwidth "
                           f"(and no capacity_gbps annotation)")
        attrs[CAPACITY_GBPS] = min(caps)
    if LATENCY_NS not in attrs:
        attrs[LATENCY_NS] = sum(lats)
        if not lats:
            inferred.append("0 ns where a link has no latency")
    cap = attrs[CAPACITY_GBPS]
    defaults = {LANES: 1, LANE_GBPS: cap, PORT_GBPS: cap, MEDIUM: "copper", TIER: str(hops[0][2].get("link"))}
    missing = [k for k in defaults if k not in attrs]
    for k in missing:
        attrs[k] = defaults[k]
    if missing:
        inferred.append(f"{', '.join(missing)} of a bundle without those annotations: one lane at the link's rate, "
                        f"copper, tier = the link's name")
    G.add_edge(a, b, **attrs)
