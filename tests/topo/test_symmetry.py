"""Translation classes on a torus give the per-flow answers, exactly."""
import numpy as np
import pytest

from fabricsim.collectives import by_size, price
from fabricsim.fabrics import build
from fabricsim.topo import routing, solver, symmetry
from fabricsim.topo.builders import leaf_spine, switched_domain


def _same(a, b):
    """Two CostReports agree on every priced figure (relative 1e-12)."""
    for f in ("time_s", "bandwidth_time_s", "latency_s", "bound_s"):
        assert getattr(a, f) == pytest.approx(getattr(b, f), rel=1e-12, abs=0), f
    assert np.allclose(a.link_bytes, b.link_bytes, rtol=1e-12, atol=1e-6)
    assert np.allclose(a.group_time_s, b.group_time_s, rtol=1e-12, atol=0)
    for pa, pb in zip(a.phases, b.phases):
        assert (pa.flows, pa.repeat, pa.events, pa.saturated_links) == (pb.flows, pb.repeat, pb.events,
                                                                        pb.saturated_links)


@pytest.mark.parametrize("dims,group,collective,algorithm", [
    ("4x6x8", 192, "all-to-all", "direct"),
    ("4x6x8", 8, "all-to-all", "direct"),
    ("4x6x8", 24, "all-to-all", "pairwise"),
    ("2x3x4", 24, "all-to-all", "direct"),
    ("5x5x2", 10, "all-to-all", "direct"),
    ("4x4x4", 16, "all-reduce", "ring"),
    ("4x4x4", 16, "all-reduce", "halving-doubling"),
    ("4x4x4", 64, "all-reduce", "torus-rings"),
    ("6x4x4", 12, "reduce-scatter", "direct"),
])
@pytest.mark.parametrize("bound_only", [False, True])
def test_classes_equal_every_flow(dims, group, collective, algorithm, bound_only):
    G = build("torus", dims=dims)
    groups = by_size(G, group)
    kw = dict(groups=groups, size_bytes=2**24, algorithm=algorithm, bound_only=bound_only)
    fast = price(G, collective, **kw)
    slow = price(G, collective, symmetry=False, **kw)
    _same(fast, slow)
    assert not any("symmetry (exact)" in n for n in slow.notes)


def test_full_torus_all_to_all_is_one_class_per_offset():
    G = build("torus", dims="4x6x8")
    r = price(G, "all-to-all", groups=by_size(G, 192), size_bytes=2**30, algorithm="direct")
    note = next(n for n in r.notes if n.startswith("symmetry (exact)"))
    assert "period 1x1x1: 36,672 flows solved as 191 classes" in note
    assert r.phases[0].flows == 192 * 191


def test_quotient_matches_the_solver_on_every_flow():
    G = build("torus", dims="4x4x6")
    lt = routing.link_table(G)
    cap = lt.capacity_Bps
    rows = np.arange(96).reshape(-1, 8)
    q = symmetry.translation_quotient(G, rows, links=lt)
    assert q is not None and q.n_flows == 12 * 8 * 7
    i, j = np.nonzero(~np.eye(8, dtype=bool))
    r = routing.route(G, rows[:, i].ravel(), rows[:, j].ravel(), links=lt)
    a = solver.simulate(r.flow_piece, r.piece_link, cap, np.full(len(r), 1e6))
    b = solver.simulate(q.routes.flow_piece, q.piece_orbit, q.orbit_capacity(cap), np.full(q.n_classes, 1e6),
                        multiplicity=q.multiplicity)
    assert b.time_s == pytest.approx(a.time_s, rel=1e-12)
    assert np.allclose(q.per_link(b.link_bytes), a.link_bytes, rtol=1e-12)
    # the per-flow rates of the first event: each class's rate is its flows' rate
    fa = dict(zip(zip(r.src.tolist(), r.dst.tolist()), a.first_rates_Bps))
    for s, d, rate in zip(q.rep_src, q.rep_dst, b.first_rates_Bps):
        assert rate == pytest.approx(fa[(int(s), int(d))], rel=1e-12)


def test_ordered_pattern_needs_order_kept():
    G = build("torus", dims="4x4x4")
    rows = np.arange(64).reshape(16, 4)
    ring = np.stack([np.arange(4), (np.arange(4) + 1) % 4])
    q = symmetry.translation_quotient(G, rows, ring)
    # z-lines: steps along x and y map lines to lines in order; a step along z rotates a
    # line's members, which an ordered pattern does not allow (compression lost, not exactness)
    assert q is not None and q.period == (1, 1, 4) and q.n_classes == 4
    # reverse every other row's member order: a step along y now changes the ring's direction
    rows2 = rows.copy()
    rows2[1::2] = rows2[1::2, ::-1]
    q2 = symmetry.translation_quotient(G, rows2, ring)
    assert q2 is not None and q2.period == (1, 2, 4)


@pytest.mark.parametrize("case", ["ecmp fabric", "failed link", "partial rows", "overlapping rows"])
def test_no_symmetry_gives_none(case):
    G = build("torus", dims="4x4x4")
    rows = np.arange(64)[None, :]
    if case == "ecmp fabric":
        G = build("jalapeno-rack")
        rows = np.arange(128)[None, :]
    elif case == "failed link":
        G = G.copy()
        G.remove_edge(*next(iter(G.edges())))
    elif case == "partial rows":
        rows = np.array([[0, 1, 2, 5]])
    else:
        rows = np.array([[0, 1], [1, 2]])
    assert symmetry.translation_quotient(G, rows) is None


def test_degraded_torus_leaves_the_translations_for_the_stabilizer():
    # (before the stabilizer was wired into price, a degraded torus priced every flow)
    G = build("torus", dims="4x4x4")
    H = G.copy()
    H.remove_edge(*next(iter(H.edges())))
    r = price(H, "all-to-all", groups=by_size(H, 64), size_bytes=2**24, algorithm="direct")
    assert r.method["path"] == "stabilizer" and r.method["refused"][0]["method"] == "translations"
    pf = price(H, "all-to-all", groups=by_size(H, 64), size_bytes=2**24, algorithm="direct", symmetry=False)
    assert r.time_s == pytest.approx(pf.time_s, rel=1e-9)
    full = price(G, "all-to-all", groups=by_size(G, 64), size_bytes=2**24, algorithm="direct")
    assert r.time_s > full.time_s


# --------------------------------------------------------------------------- twins
def _degraded(name, specs, **params):
    from fabricsim.topo.failures import apply_failures
    return apply_failures(build(name, **params), specs)[0]


@pytest.mark.parametrize("make,group,placement,collective,algorithm", [
    (lambda: build("jalapeno-rack"), 128, "packed", "all-to-all", "direct"),
    (lambda: build("jalapeno-rack"), 16, "packed", "all-reduce", "direct"),
    (lambda: build("jalapeno-pod", racks=2), 256, "packed", "all-to-all", "direct"),
    (lambda: build("jalapeno-pod", racks=2), 256, "packed", "all-to-all", "hierarchical"),
    (lambda: build("jalapeno-pod", racks=3), 32, "random:4", "all-to-all", "direct"),
    (lambda: build("jalapeno-pod", racks=2), 64, "spread", "all-to-all", "direct"),
    (lambda: build("nvl72"), 72, "packed", "all-to-all", "direct"),
    (lambda: build("helios"), 72, "packed", "all-to-all", "direct"),
    (lambda: _degraded("jalapeno-pod", ["node:r00/lsw0", "lanes:r01/xpu003--r01/lsw2=1"], racks=2), 256,
     "packed", "all-to-all", "direct"),
    (lambda: _degraded("jalapeno-pod", ["rail:1"], racks=2), 256, "packed", "all-to-all", "direct"),
    (lambda: leaf_spine(leaves=8, chips_per_leaf=8, spines=4, oversubscription=2.0), 16, "packed", "all-to-all",
     "direct"),
    (lambda: switched_domain(chips=32, planes=4), 8, "spread", "all-to-all", "direct"),
])
@pytest.mark.parametrize("bound_only", [False, True])
def test_twin_classes_equal_every_flow(make, group, placement, collective, algorithm, bound_only):
    G = make()
    groups = by_size(G, group, placement)
    # split="equal": the Jalapeño fabrics' default is adaptive (Tomahawk 6 Cognitive Routing,
    # topo/routing/switching.py), where a per-flow cross-check past the multipath program's limit
    # (65,280 flows on the degraded 2-rack pod) falls back to equal while the fold runs adaptive
    kw = dict(groups=groups, size_bytes=2**24, algorithm=algorithm, bound_only=bound_only, split="equal")
    fast = price(G, collective, **kw)
    slow = price(G, collective, symmetry=False, **kw)
    _same(fast, slow)
    assert fast.unreachable_pairs == slow.unreachable_pairs
    assert any("interchangeable chips" in n for n in fast.notes) or placement.startswith("random")


def test_twins_of_a_switched_rack_are_one_class():
    G = build("jalapeno-pod", racks=2)
    q = symmetry.twin_quotient(G, np.arange(256)[None, :])
    # same rack (x2) and across racks (x2): four classes of 128 x 127 and 128 x 128 flows
    assert q.n_classes == 4 and sorted(q.multiplicity.tolist()) == [128 * 127] * 2 + [128 * 128] * 2
    # a chip that lost a lane is no longer anyone's twin: its pairs become classes of their own
    H = _degraded("jalapeno-pod", ["lanes:r00/xpu003--r00/lsw2=1"], racks=2)
    qh = symmetry.twin_quotient(H, np.arange(256)[None, :])
    assert qh.n_classes > q.n_classes and qh.n_flows == q.n_flows


@pytest.mark.parametrize("case", ["ordered pattern", "torus", "no twins", "lost chip"])
def test_no_twins_gives_none(case):
    G = build("jalapeno-rack")
    rows, pairs = np.arange(128)[None, :], None
    if case == "ordered pattern":
        pairs = np.stack([np.arange(128), (np.arange(128) + 1) % 128])
    elif case == "torus":
        G = build("torus", dims="4x4x4")
        rows = np.arange(64)[None, :]
    elif case == "no twins":
        G = build("boardfly")
        rows = np.arange(64)[None, :]
    else:
        G = _degraded("jalapeno-rack", ["chip:r00/xpu005"])
    assert symmetry.twin_quotient(G, rows, pairs) is None


# --------------------------------------------------------------------------- failures on a symmetric torus
def test_flows_through_are_exactly_the_flows_on_those_links():
    G = build("torus", dims="4x6x8")
    lt = routing.link_table(G)
    rows = np.arange(192).reshape(-1, 24)
    q = symmetry.translation_quotient(G, rows, links=lt)
    failed = [5, 100, 101, 777]
    s, d, c = symmetry.flows_through(q, failed)
    i, j = np.nonzero(~np.eye(24, dtype=bool))
    r = routing.route(G, rows[:, i].ravel(), rows[:, j].ravel(), links=lt)
    hit = np.unique((r.flow_piece @ r.piece_link).tocsc()[:, failed].tocoo().row)
    assert set(zip(s.tolist(), d.tolist())) == set(zip(r.src[hit].tolist(), r.dst[hit].tolist()))
    assert len(s) == len(hit)


@pytest.mark.parametrize("specs", [["link:c00.00.00--c01.00.00"], ["ocs:3"], ["lanes:c00.00.00--c00.01.00=1"],
                                   ["ocs:20", "link:c01.01.01--c01.01.02"]])
@pytest.mark.parametrize("group", [128, 16])
def test_bound_of_a_degraded_torus_from_the_intact_classes(specs, group):
    from fabricsim.topo.failures import apply_failures
    G = build("ironwood", dims=(4, 4, 8))
    H = apply_failures(G, specs)[0]
    kw = dict(groups=by_size(H, group), size_bytes=2**24, algorithm="direct", bound_only=True)
    fast = price(H, "all-to-all", reference=G, **kw)
    slow = price(H, "all-to-all", **kw)
    _same(fast, slow)
    assert any("the failures touch" in n for n in fast.notes)


def test_whatif_bound_uses_the_intact_classes():
    from fabricsim.collectives.whatif import whatif
    G = build("torus", dims="4x4x6")
    w = whatif(G, ["link:c00.00.00--c01.00.00"], "all-to-all", groups=by_size(G, 96), size_bytes=2**24,
               algorithm="direct", bound_only=True)
    assert any("the failures touch" in n for n in w.degraded.notes)
    assert w.slowdown > 1


def test_classes_are_sized_by_the_memory_guard_too():
    from fabricsim.topo.errors import TooLarge
    G = build("torus", dims="4x6x8")
    with pytest.raises(TooLarge, match="bound-only"):
        price(G, "all-to-all", groups=by_size(G, 192), size_bytes=2**24, algorithm="direct",
              memory_limit_bytes=10 ** 6)
    assert price(G, "all-to-all", groups=by_size(G, 192), size_bytes=2**24, algorithm="direct",
                 memory_limit_bytes=4 * 10 ** 6).time_s > 0


# --------------------------------------------------------------------------- positions (relays by position)
_STATIC = dict(racks=2, leaf="static")
_CUT = [f"link:r00/xpu005--r00/gsw{i}" for i in range(4)]


@pytest.mark.parametrize("specs,group,placement", [
    ([], 256, "packed"),
    ([], 64, "spread"),
    (["rail-switch:rail3/sw5"], 256, "packed"),
    (["leaf-switch:r00/gsw0", "leaf-switch:r01/gsw1"], 256, "packed"),
    (["link:r00/xpu005--r00/gsw1"], 256, "packed"),
    (_CUT, 256, "packed"),                                     # relays on the destination side too
    (_CUT + [f"link:r01/xpu010--r01/gsw{i}" for i in range(4)], 256, "packed"),   # and on both sides
])
@pytest.mark.parametrize("bound_only", [False, True])
def test_position_classes_equal_every_flow(specs, group, placement, bound_only):
    from fabricsim.topo.failures import apply_failures
    G = apply_failures(build("jalapeno-pod", **_STATIC), specs)[0]
    kw = dict(groups=by_size(G, group, placement), size_bytes=2**24, algorithm="direct", bound_only=bound_only)
    fast = price(G, "all-to-all", **kw)
    slow = price(G, "all-to-all", symmetry=False, **kw)
    _same(fast, slow)
    relay_notes = [[n for n in r.notes if "relay through" in n] for r in (fast, slow)]
    assert relay_notes[0] == relay_notes[1]


def test_static_pod_all_to_all_is_position_classes():
    G = build("jalapeno-pod", **_STATIC)
    r = price(G, "all-to-all", groups=by_size(G, 256), size_bytes=2**24, algorithm="direct")
    assert any("interchangeable positions" in n and "272 classes" in n for n in r.notes)
    # per-port rail wiring relays too; its positions are alike in fewer ways
    P = build("jalapeno-pod", racks=2, rail_wiring="per-port")
    r = price(P, "all-to-all", groups=by_size(P, 256), size_bytes=2**24, algorithm="direct")
    assert any("interchangeable positions" in n for n in r.notes)


def _random_case(rng):
    """A random fabric (maybe with one failure), placement, collective and algorithm; or None."""
    from fabricsim.collectives import algorithms_for, view_of
    from fabricsim.topo.failures import apply_failures, domains
    kind = rng.choice(["torus", "pod", "static", "rack", "nvl72"])
    if kind == "torus":
        dims = "x".join(str(int(k)) for k in rng.choice([2, 3, 4, 5, 6], size=rng.integers(1, 4)))
        if np.prod([int(k) for k in dims.split("x")]) < 2:
            return None
        G = build("torus", dims=dims)
    elif kind in ("pod", "static"):
        G = build("jalapeno-pod", racks=int(rng.integers(1, 4)), leaf="static" if kind == "static" else "switched")
    else:
        G = build("jalapeno-rack" if kind == "rack" else "nvl72")
    if rng.random() < 0.4:
        doms = domains(G)
        cls = str(rng.choice(sorted(c for c in doms if c not in ("rack", "chip", "node", "tray"))))
        G = apply_failures(G, [f"{cls}:{doms[cls][int(rng.integers(len(doms[cls])))].id}"])[0]
    n = sum(1 for _, d in G.nodes(data=True) if d["kind"] == "chip")
    g = int(rng.choice([k for k in range(2, n + 1) if n % k == 0]))
    groups = by_size(G, g, str(rng.choice(["packed", "spread", "random:3"])))
    collective = str(rng.choice(["all-to-all", "all-reduce", "reduce-scatter"]))
    algorithm = str(rng.choice(algorithms_for(collective, groups, view_of(G))))
    if algorithm == "pairwise" and g > 16:
        return None
    return G, collective, dict(groups=groups, size_bytes=2**22, algorithm=algorithm, bound_only=rng.random() < 0.3)


@pytest.mark.slow    # over 5 s on the 2-core machine (pytest --durations, 2026-12-04)
@pytest.mark.parametrize("seed", range(4))
def test_random_cases_agree_with_every_flow(seed):
    rng = np.random.default_rng(seed)
    compared = 0
    while compared < 12:
        case = _random_case(rng)
        if case is None:
            continue
        G, collective, kw = case
        _same(price(G, collective, **kw), price(G, collective, symmetry=False, **kw))
        compared += 1


# --------------------------------------------------------------------------- stabilizer of failures


def _stabilizer_vs_every_flow(H, rows):
    from fabricsim.topo.routing.torus import fold_stabilizer
    lt = routing.link_table(H)
    cap = lt.capacity_Bps
    fold = fold_stabilizer(H, rows, links=lt)
    assert fold, fold.reason
    q = fold.quotient
    R, m = rows.shape
    assert q.n_flows == R * m * (m - 1) and q.n_classes < q.n_flows
    i, j = np.nonzero(~np.eye(m, dtype=bool))
    r = routing.route(H, rows[:, i].ravel(), rows[:, j].ravel(), links=lt)
    size = np.full(len(r), 1e6)
    a = solver.simulate(r.flow_piece, r.piece_link, cap, size)
    b = solver.simulate(q.routes.flow_piece, q.piece_orbit, q.orbit_capacity(cap), np.full(q.n_classes, 1e6),
                        multiplicity=q.multiplicity)
    assert b.time_s == pytest.approx(a.time_s, rel=1e-12)
    assert np.allclose(q.per_link(b.link_bytes), a.link_bytes, rtol=1e-12, atol=1e-3)
    fa = dict(zip(zip(r.src.tolist(), r.dst.tolist()), a.first_rates_Bps))
    fin = dict(zip(zip(r.src.tolist(), r.dst.tolist()), a.finish_s))
    for s, d, rate, t in zip(q.rep_src.tolist(), q.rep_dst.tolist(), b.first_rates_Bps, b.finish_s):
        # each class's rate and finish time are its flows' (1e-9: sums in another order)
        assert rate == pytest.approx(fa[(s, d)], rel=1e-9)
        assert t == pytest.approx(fin[(s, d)], rel=1e-9)
    bound = solver.link_load_bound(r.flow_piece, r.piece_link, cap, size)
    qb = solver.link_load_bound(q.routes.flow_piece, q.piece_orbit, q.orbit_capacity(cap),
                                np.full(q.n_classes, 1e6), multiplicity=q.multiplicity)
    assert qb.time_s == pytest.approx(bound.time_s, rel=1e-12)
    return q


@pytest.mark.parametrize("dims,specs,group", [
    ("4x4x4", ["link:c00.00.00--c01.00.00"], 64),
    ("4x4x4", ["link:c02.01.03--c02.01.00"], 64),           # a wrap-around link
    ("4x6x5", ["link:c01.02.03--c01.02.04"], 120),
    ("5x4x3", ["lanes:c00.00.00--c00.01.00=1"], 60),        # a degraded link, not a missing one
    ("4x4x4", ["link:c00.00.00--c01.00.00", "link:c00.00.00--c03.00.00"], 64),
    ("4x4x4", ["link:c00.00.00--c01.00.00"], 16),           # groups of 16 (x-y planes)
    ("6x2x4", ["link:c02.00.01--c03.00.01"], 48),
])
def test_stabilizer_classes_equal_every_flow(dims, specs, group):
    from fabricsim.topo.failures import apply_failures
    H = apply_failures(build("torus", dims=dims), specs)[0]
    n = H.number_of_nodes()
    _stabilizer_vs_every_flow(H, np.arange(n).reshape(-1, group))


def test_one_failed_link_keeps_the_reflections_through_it():
    from fabricsim.topo.failures import apply_failures
    H = apply_failures(build("torus", dims="8x8x8"), ["link:c00.00.00--c01.00.00"])[0]
    q = _stabilizer_vs_every_flow(H, np.arange(512)[None, :])
    # 2**3 reflections: orbits of at most 8 flows, most of exactly 8
    assert q.multiplicity.max() == 8 and q.n_classes < 512 * 511 // 7
    assert q.symmetry == "stabilizer"


@pytest.mark.parametrize("case", ["chip", "not-dor", "no-symmetry", "shared"])
def test_stabilizer_refusals_say_why(case):
    from fabricsim.topo.failures import apply_failures
    from fabricsim.topo.routing.torus import fold_stabilizer
    G = build("torus", dims="4x4x4")
    rows = np.arange(64)[None, :]
    if case == "chip":
        H, why = apply_failures(G, ["node:c01.01.01"])[0], "a chip failed"
    elif case == "not-dor":
        H, rows, why = build("jalapeno-rack"), np.arange(8)[None, :], "not dimension-order"
    elif case == "no-symmetry":
        # degraded links placed so no per-axis reflection or translation maps them onto themselves
        H = apply_failures(G, ["lanes:c00.00.00--c01.00.00=1", "lanes:c00.00.00--c00.01.00=2",
                               "lanes:c01.01.00--c01.01.01=3"])[0]
        why = "no reflection or translation"
    else:
        H, rows, why = G, np.array([[0, 1], [1, 2]]), "share chips"
    fold = fold_stabilizer(H, rows)
    assert not fold and why in fold.reason
