"""Adding a routing policy, an algorithm or a failure class is a change in one place (issue 26 item 1).

Each test registers a toy record from outside the package, through the registry's public
``register``, uses it through the ordinary entry points (``price``, ``apply_failures``,
``fabric_symmetry``), and unregisters it in teardown.
"""
from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from fabricsim.collectives import algorithms, by_size, price
from fabricsim.collectives.algorithms import Algorithm, Phase
from fabricsim.collectives.whatif.orbits import fabric_symmetry
from fabricsim.fabrics import build
from fabricsim.topo import failures, routing
from fabricsim.topo.contract import TIER, validate
from fabricsim.topo.errors import BadInput
from fabricsim.topo.failures import Domain, FailureClass
from fabricsim.topo.routing import Fold, Policy
from fabricsim.topo.routing.core import PolicyRoutes


# --------------------------------------------------------------------------- a toy routing policy
def _first_path_router(net, s, d, split, tiers):
    """Every pair over one fixed shortest path: breadth first from the source, links in table order,
    only forwarding nodes in between (the first path found; no split)."""
    lt = net.lt
    src, dst = np.asarray(lt.src), np.asarray(lt.dst)
    out_links = [[] for _ in range(net.n)]
    for l in np.argsort(src, kind="stable").tolist():
        out_links[src[l]].append(l)
    parents: dict[int, dict] = {}

    def tree(a):
        if a not in parents:
            par, q = {a: None}, deque([a])
            while q:
                v = q.popleft()
                if v != a and not net.fwd[v]:
                    continue
                for l in out_links[v]:
                    w = int(dst[l])
                    if w not in par:
                        par[w] = l
                        q.append(w)
            parents[a] = par
        return parents[a]

    paths = []
    for a, b in zip(s.tolist(), d.tolist()):
        par = tree(a)
        if b not in par:
            paths.append(None)
            continue
        path, v = [], b
        while par[v] is not None:
            path.append(par[v])
            v = int(src[par[v]])
        paths.append(path[::-1])
    return PolicyRoutes.on_paths(net, paths)


def _no_fold(G, rows, pairs=None, **kw):
    return Fold.refuse("first-path", "the toy policy claims no symmetry")


@pytest.fixture
def first_path():
    p = routing.register(Policy("first-path", _first_path_router, _no_fold, generators=()))
    yield p
    routing.unregister("first-path")


def test_toy_policy_prices_an_all_reduce(first_path):
    G = build("jalapeno-rack")                  # 128 chips, each linked to the same 6 local switches
    H = G.copy()
    H.graph["routing"] = "first-path"
    assert validate(H) == []                     # the contract reads the registry
    groups = by_size(G, 8)
    kw = dict(groups=groups, size_bytes=2**26, algorithm="ring", protocol="ideal")
    ecmp, toy = price(G, "all-reduce", **kw), price(H, "all-reduce", **kw)
    # ECMP spreads each flow over the 6 switches, the toy policy sends it all through the first:
    # the bandwidth term grows by the number of switches a chip reaches
    n_sw = sum(1 for v in G["r00/xpu000"] if G.nodes[v]["kind"] == "switch")
    assert toy.bandwidth_time_s == pytest.approx(n_sw * ecmp.bandwidth_time_s, rel=1e-6)
    assert routing.policy_of(H) is first_path
    # no symmetry offered: the fabric's symmetry has only what the policy's generators allow
    assert fabric_symmetry(H, groups, "ring").generators == ()
    assert fabric_symmetry(G, groups, "ring").generators != ()


def test_toy_policy_routes_one_path(first_path):
    G = build("jalapeno-rack")
    G.graph["routing"] = "first-path"
    r = routing.route(G, [0, 5], [1, 9])
    assert r.shares([0]).sum() == pytest.approx(2.0)          # chip -> one switch -> chip: two links
    assert r.shares([0]).max() == pytest.approx(1.0)          # the whole flow on each
    assert list(r.hops) == [2, 2]


def test_unregistered_policy_is_refused_everywhere():
    G = build("jalapeno-rack")
    G.graph["routing"] = "first-path"
    assert [v for v in validate(G) if "first-path" in v.problem]
    with pytest.raises(BadInput, match="first-path"):
        routing.route(G, [0], [1])
    with pytest.raises(BadInput, match="already registered"):
        routing.register(routing.POLICIES["ecmp"])
    with pytest.raises(BadInput, match="generator kind"):
        Policy("bad", _first_path_router, _no_fold, generators=("mirror",))


# --------------------------------------------------------------------------- a toy algorithm
def _ring_back(collective, groups, size, view):
    """The ring run the other way round: member i sends to member i - 1."""
    g, n = groups.shape
    steps = {"all-reduce": 2 * (n - 1), "all-gather": n - 1, "reduce-scatter": n - 1}[collective]
    a = np.arange(n)
    return [Phase(f"backward ring step ({steps} identical steps)", groups, size / n, np.arange(g), steps,
                  pairs=np.stack([a, (a - 1) % n]))]


@pytest.fixture
def ring_back():
    a = algorithms.register(Algorithm("ring-back", ("all-reduce", "all-gather", "reduce-scatter"), _ring_back,
                                      order="rotation", always_applies=True))
    yield a
    algorithms.unregister("ring-back")


def test_toy_algorithm_prices_and_auto_sees_it(ring_back):
    G = build("nvl72")
    groups = by_size(G, 8)
    kw = dict(groups=groups, size_bytes=2**26, protocol="ideal")
    fwd = price(G, "all-reduce", algorithm="ring", **kw)
    back = price(G, "all-reduce", algorithm="ring-back", **kw)
    assert back.time_s == pytest.approx(fwd.time_s, rel=1e-9)      # a switched domain: direction is immaterial
    assert "ring-back" in algorithms.ALGORITHMS["all-gather"]
    assert "ring-back" not in algorithms.ALGORITHMS["all-to-all"]
    auto = price(G, "all-reduce", algorithm="auto", **kw)
    assert "ring-back" in auto.notes[0]                              # auto tried it (always_applies)
    # the what-if symmetry reads the record's order: as a ring, up to rotation
    assert [g.name for g in fabric_symmetry(G, groups, "ring-back").generators] == \
        [g.name for g in fabric_symmetry(G, groups, "ring").generators]


def test_algorithm_records_are_checked():
    with pytest.raises(BadInput, match="collective"):
        Algorithm("x", ("all-to-one",), _ring_back)
    with pytest.raises(BadInput, match="order"):
        Algorithm("x", ("all-reduce",), _ring_back, order="sorted")
    with pytest.raises(BadInput, match="already registered"):
        algorithms.register(algorithms.ALGORITHM_RECORDS["ring"])
    with pytest.raises(BadInput, match="ring-back"):
        price(build("nvl72"), "all-reduce", groups=[list(range(8))], size_bytes=2**20, algorithm="ring-back")


def test_in_network_records_match_their_phases():
    """``in_network`` says what the builder's phases do (NVL72's switches reduce)."""
    G = build("nvl72")
    view = algorithms.view_of(G)
    built = set()
    for coll, names in algorithms.ALGORITHMS.items():
        for name in names:
            try:
                ph = algorithms.phases(coll, name, by_size(G, 8), 2**20, view)
            except BadInput:
                continue
            built.add(name)
            assert any(p.in_network for p in ph) == algorithms.ALGORITHM_RECORDS[name].in_network, (coll, name)
    assert {"nvls", "ring", "direct"} <= built


# --------------------------------------------------------------------------- a toy failure class
def _tier_domains(G, cls):
    by: dict = {}
    for u, v, d in G.edges(data=True):
        by.setdefault(str(d.get(TIER)), []).append((u, v))
    return [Domain(t, f"every {t} link: {len(e)}", edges=tuple(e)) for t, e in sorted(by.items())]


@pytest.fixture
def tier_class():
    fc = failures.register(FailureClass("tier", "tier:NAME", _tier_domains,
                                        lambda tags: ["tier"] if tags.has_edges else [],
                                        "the symmetries that map the tier's links onto themselves (all of them)"))
    yield fc
    failures.unregister("tier")


def test_toy_failure_class_applies(tier_class):
    G = build("jalapeno-pod", racks=2)
    assert failures.domain_classes(G)[-1] == "tier"
    ids = [d.id for d in failures.domains(G, ["tier"])["tier"]]
    assert ids == sorted({str(d[TIER]) for _, _, d in G.edges(data=True)})
    H, applied = failures.apply_failures(G, ["tier:global"])
    n_global = sum(d[TIER] == "global" for _, _, d in G.edges(data=True))
    assert n_global > 0 and len(applied[0]["edges_removed"]) == n_global
    assert not any(d[TIER] == "global" for _, _, d in H.edges(data=True))
    assert "tier" in failures.FIXED_CLASSES and "tier" in failures.PRESERVES
    assert failures.preserved_symmetries("tier").startswith("the symmetries that map the tier's")
    assert failures.never_kept("tier") == ()
    with pytest.raises(BadInput, match="no tier 'glob'"):
        failures.apply_failures(G, ["tier:glob"])


def test_unregistered_failure_class_is_refused():
    with pytest.raises(BadInput, match="unknown failure class 'tier'"):
        failures.parse_spec("tier:global")
    assert "tier" not in failures.FIXED_CLASSES
    with pytest.raises(BadInput, match="already registered"):
        failures.register(failures.FAILURE_CLASSES["rack"])


def test_resolve_is_the_public_lookup():
    G = build("jalapeno-rack")
    [dom] = failures.resolve(G, ["tray:r00/t03"])               # one rack: the rack-qualified alias works
    assert dom.id == "t03" and len(dom.nodes) == 8
    with pytest.raises(BadInput, match="no node"):
        failures.resolve(G, ["node:r00/nope"])


def test_every_generator_kind_has_a_builder():
    from fabricsim.collectives.whatif.orbits import GENERATOR_BUILDERS
    assert set(GENERATOR_BUILDERS) == set(routing.GENERATOR_KINDS)
    assert all(set(p.generators) <= set(routing.GENERATOR_KINDS) for p in routing.POLICIES.values())


def _link_tiers(G, src, dst):
    lt = routing.link_table(G)
    r = routing.route(G, [src], [dst])
    return sorted({str(t) for t in np.asarray(lt.tier)[r.piece_link[r.flow_piece[0].indices].indices]})


@pytest.mark.parametrize("fabric, kw, pair", [("jalapeno-pod", {"racks": 2}, (0, 1)), ("torus", {"dims": "4x4"}, (0, 5))])
def test_policy_reads_what_it_says(fabric, kw, pair):
    """Each label a policy says it ``reads`` changes its routes (or is demanded) when it is taken away, and
    each ``graph_reads`` attribute is demanded by name."""
    G = build(fabric, **kw)
    p = routing.policy_of(G)
    assert p.reads
    base = routing.route(G, [pair[0]], [pair[1]])
    for label in [a for a in p.reads if any(a in d for _, d in G.nodes(data=True))]:
        H = G.copy()
        for _, d in H.nodes(data=True):
            d.pop(label, None)
        try:
            got = routing.route(H, [pair[0]], [pair[1]])
        except BadInput as exc:
            assert label in str(exc)
            continue
        assert _link_tiers(H, *pair) != _link_tiers(G, *pair) or \
            (got.piece_link.T @ got.flow_piece.T).toarray().tolist() != \
            (base.piece_link.T @ base.flow_piece.T).toarray().tolist(), label
    for attr in p.graph_reads:
        H = G.copy()
        del H.graph[attr]
        with pytest.raises(BadInput, match=attr):
            routing.route(H, [pair[0]], [pair[1]])
