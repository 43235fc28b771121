"""Tests of fabricsim.topo.solver: LP agreement, closed forms, events, certificates, memory."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from fabricsim.topo import solver
from fabricsim.topo.errors import TooLarge
from fabricsim.topo.solver import (
    check_maxmin,
    estimate_memory_bytes,
    guard_memory,
    link_load_bound,
    maxmin_rates,
    simulate,
)


def random_instance(seed: int, n_flows: int, n_links: int):
    """Random factored problem: each flow on 1-3 pieces, each piece on 1-4 links."""
    rng = np.random.default_rng(seed)
    n_pieces = int(rng.integers(2, 2 * n_links + 2))
    rows = np.repeat(np.arange(n_flows), rng.integers(1, 4, n_flows))
    fp = sp.coo_array((rng.uniform(0.1, 1.0, rows.size), (rows, rng.integers(0, n_pieces, rows.size))),
                      shape=(n_flows, n_pieces)).tocsr()
    prow = np.repeat(np.arange(n_pieces), rng.integers(1, 5, n_pieces))
    pl = sp.coo_array((rng.uniform(0.1, 1.0, prow.size), (prow, rng.integers(0, n_links, prow.size))),
                      shape=(n_pieces, n_links)).tocsr()
    # A few distinct capacity values make simultaneous saturations (ties) common.
    cap = rng.choice([1.0, 2.0, 3.5, 5.0, 8.0], n_links) * rng.choice([1.0, 1.0, 1.7], n_links)
    weights = rng.choice([1.0, 2.0, 0.5], n_flows) if seed % 2 else None
    mult = rng.integers(1, 4, n_flows).astype(float) if seed % 3 == 0 else None
    return fp, pl, cap, weights, mult


def lp_maxmin(A: np.ndarray, cap: np.ndarray, w: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Reference: sequential LPs on the explicit A (maximize the common level, freeze tight links)."""
    F, L = A.shape
    rate = np.zeros(F)
    frozen = np.zeros(F, dtype=bool)
    load_coef = A * m[:, None]
    while not frozen.all():
        live = ~frozen
        # Variables: the level t; rates of live flows are w t.
        coef = (load_coef[live] * w[live, None]).sum(axis=0)
        base = load_coef[frozen].T @ rate[frozen]
        rows = coef > 1e-300
        res = linprog(c=[-1.0], A_ub=coef[rows, None], b_ub=cap[rows] - base[rows],
                      bounds=[(0, None)], method="highs")
        assert res.status == 0, res.message
        t = res.x[0]
        tight = rows & (coef * t + base >= cap * (1 - 1e-9))
        hit = live & (A[:, tight] > 0).any(axis=1)
        assert hit.any()
        rate[hit] = w[hit] * t
        frozen |= hit
    return rate


SIZES = [(3, 3), (8, 5), (15, 10), (30, 20)]


@pytest.fixture(params=["gather", "matvec"])
def round_path(request, monkeypatch):
    """Force every round and rollback through the gather or the whole-matrix code path."""
    share = np.inf if request.param == "gather" else 0.0
    monkeypatch.setattr(solver, "_MATVEC_SHARE", share)
    monkeypatch.setattr(solver, "_RESYNC_SHARE", share)
    return request.param


@pytest.fixture(params=["numpy", "kernel"])
def solver_path(request, monkeypatch):
    """Fill through the numpy passes only, or through the compiled kernel from round 0."""
    if request.param == "numpy":
        monkeypatch.setattr(solver, "_USE_KERNEL", False)
    else:
        pytest.importorskip("numba")
        monkeypatch.setattr(solver, "_USE_KERNEL", True)
        monkeypatch.setattr(solver, "_KERNEL_ROUNDS_ANY", 0)
        monkeypatch.setattr(solver, "_KERNEL_ROWS", 0)   # and its column structure
    return request.param


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("n_flows, n_links", SIZES)
def test_agrees_with_sequential_lp(seed, n_flows, n_links, round_path):
    fp, pl, cap, w, m = random_instance(seed, n_flows, n_links)
    r = maxmin_rates(fp, pl, cap, weights=w, multiplicity=m)
    ones = np.ones(n_flows)
    ref = lp_maxmin((fp @ pl).toarray(), cap, ones if w is None else w, ones if m is None else m)
    np.testing.assert_allclose(r.rate_Bps, ref, rtol=1e-7)
    assert check_maxmin(fp, pl, cap, r.rate_Bps, weights=w, multiplicity=m) == []


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n_flows=st.integers(1, 25), n_links=st.integers(1, 12))
def test_certificate_holds_on_random_instances(seed, n_flows, n_links):
    fp, pl, cap, w, m = random_instance(seed, n_flows, n_links)
    r = maxmin_rates(fp, pl, cap, weights=w, multiplicity=m)
    assert check_maxmin(fp, pl, cap, r.rate_Bps, weights=w, multiplicity=m) == []
    # Every flow's bottleneck is a link it crosses.
    A = (fp @ pl).toarray()
    assert np.all(A[np.arange(n_flows), r.bottleneck_link] > 0)


# --------------------------------------------------------------------------- closed forms


def one_link(n: int):
    return sp.csr_array(np.ones((n, 1))), sp.csr_array(np.ones((1, 1)))


@pytest.mark.parametrize("n", [1, 2, 7])
def test_n_flows_share_one_link(n):
    fp, pl = one_link(n)
    r = maxmin_rates(fp, pl, [12.0])
    assert r.rate_Bps == pytest.approx(np.full(n, 12.0 / n))
    assert r.n_levels == 1
    assert r.bottleneck_link.tolist() == [0] * n


def test_classic_three_link_example(solver_path):
    # l0 (cap 1): f0 f1 f2; l1 (cap 2): f2 f3; l2 (cap 1.5): f3 f4.
    # l0 saturates at 1/3 (f0-f2); then l2 at 0.75 (f3, f4); l1 stays unsaturated.
    A = np.array([[1, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 1], [0, 0, 1]], dtype=float)
    r = maxmin_rates(sp.csr_array(A), sp.identity(3, format="csr"), [1.0, 2.0, 1.5])
    assert r.rate_Bps == pytest.approx([1 / 3, 1 / 3, 1 / 3, 0.75, 0.75])
    assert r.bottleneck_link.tolist() == [0, 0, 0, 2, 2]
    assert r.n_levels == 2


def test_weighted_share():
    fp, pl = one_link(2)
    r = maxmin_rates(fp, pl, [9.0], weights=[1.0, 2.0])
    assert r.rate_Bps == pytest.approx([3.0, 6.0])


def test_multiplicity_equals_duplicated_rows():
    fp, pl, cap, w, _ = random_instance(5, 12, 6)
    mult = np.array([1, 3, 2, 1, 1, 4, 1, 2, 1, 1, 3, 1])
    r = maxmin_rates(fp, pl, cap, weights=w, multiplicity=mult)
    dup = np.repeat(np.arange(12), mult)
    r_dup = maxmin_rates(fp[dup], pl, cap, weights=None if w is None else w[dup])
    np.testing.assert_allclose(r.rate_Bps[dup], r_dup.rate_Bps, rtol=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_factored_equals_explicit(seed):
    fp, pl, cap, w, m = random_instance(seed, 20, 8)
    A = (fp @ pl).tocsr()
    r = maxmin_rates(fp, pl, cap, weights=w, multiplicity=m)
    r_explicit = maxmin_rates(A, sp.identity(8, format="csr"), cap, weights=w, multiplicity=m)
    np.testing.assert_allclose(r.rate_Bps, r_explicit.rate_Bps, rtol=1e-12)


def test_unlimited_links_are_ignored():
    A = np.array([[1.0, 1.0], [1.0, 0.0]])
    r = maxmin_rates(sp.csr_array(A), sp.identity(2, format="csr"), [4.0, np.inf])
    assert r.rate_Bps == pytest.approx([2.0, 2.0])
    assert r.bottleneck_link.tolist() == [0, 0]


def test_flow_on_unlimited_links_only_is_an_error():
    A = np.array([[1.0, 1.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match="1 of 2 flows cross no capacity-limited link"):
        maxmin_rates(sp.csr_array(A), sp.identity(2, format="csr"), [4.0, np.inf])


def test_all_zero_row_is_an_error():
    fp = sp.csr_array(np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]]))
    pl = sp.csr_array(np.array([[1.0], [0.0]]))
    with pytest.raises(ValueError, match="2 of 3 flows cross no capacity-limited link"):
        maxmin_rates(fp, pl, [1.0])


def test_bad_shapes_name_the_argument():
    fp, pl = one_link(2)
    with pytest.raises(ValueError, match=r"capacity_Bps must have shape \(1,\)"):
        maxmin_rates(fp, pl, [1.0, 2.0])


def test_negative_weight_is_named():
    fp, pl = one_link(2)
    with pytest.raises(ValueError, match=r"weights\[1\] = -1"):
        maxmin_rates(fp, pl, [1.0], weights=[1.0, -1.0])


def test_no_flows():
    r = maxmin_rates(sp.csr_array((0, 2)), sp.csr_array(np.ones((2, 3))), [1.0, 1.0, 1.0])
    assert r.rate_Bps.shape == (0,) and r.n_levels == 0


# --------------------------------------------------------------------------- events


def test_two_flows_small_then_big():
    fp, pl = one_link(2)
    S, C = 3.0e9, 1.0e9
    res = simulate(fp, pl, [C], [S, 2 * S])
    assert res.finish_s == pytest.approx([2 * S / C, 3 * S / C])
    assert res.time_s == pytest.approx(3 * S / C)
    assert res.events == 2
    assert res.first_rates_Bps == pytest.approx([C / 2, C / 2])
    assert isinstance(res.time_s, float) and isinstance(res.bound_s, float)


def test_equal_finishes_retire_in_one_event():
    fp, pl = one_link(4)
    res = simulate(fp, pl, [8.0], [2.0, 2.0, 2.0, 2.0])
    assert res.events == 1
    assert res.finish_s == pytest.approx([1.0] * 4)


def test_single_bottleneck_equal_sizes_meets_bound_exactly():
    fp, pl = one_link(5)
    res = simulate(fp, pl, [10.0], np.full(5, 4.0))
    assert res.time_s == res.bound_s == 2.0
    assert res.utilization == pytest.approx([1.0])
    assert res.link_busy_s == pytest.approx([2.0])


@pytest.mark.parametrize("seed", range(8))
def test_time_at_least_link_load_bound(seed, round_path):
    fp, pl, cap, w, m = random_instance(seed, 25, 10)
    size = np.random.default_rng(seed).uniform(1.0, 10.0, 25)
    res = simulate(fp, pl, cap, size, weights=w, multiplicity=m)
    b = link_load_bound(fp, pl, cap, size, multiplicity=m)
    assert res.time_s >= b.time_s * (1 - 1e-12)
    assert res.bound_s == b.time_s
    np.testing.assert_allclose(res.link_bytes, b.link_bytes)
    assert np.all(res.peak_utilization <= 1 + 1e-9)
    assert np.all(res.utilization <= 1 + 1e-9)
    # Bytes delivered: each flow's rate integrated over time equals its size.
    assert np.all(res.finish_s > 0) and res.time_s == res.finish_s.max()


def test_link_load_bound_names_busiest_link():
    A = np.array([[1.0, 0.0], [0.5, 0.5]])
    b = link_load_bound(sp.csr_array(A), sp.identity(2, format="csr"), [10.0, 1.0], [10.0, 4.0])
    assert b.link_bytes == pytest.approx([12.0, 2.0])
    assert b.busiest_link == 1 and b.time_s == pytest.approx(2.0)


def test_zero_size_flows_finish_at_zero():
    fp, pl = one_link(3)
    res = simulate(fp, pl, [1.0], [0.0, 1.0, 1.0])
    assert res.finish_s.tolist() == [0.0, 2.0, 2.0]


def test_simulate_without_bytes_or_flows():
    fp, pl = one_link(3)
    res = simulate(fp, pl, [1.0], [0.0, 0.0, 0.0])
    assert res.time_s == 0.0 and res.events == 0 and res.finish_s.tolist() == [0.0] * 3
    empty = simulate(sp.csr_array((0, 1)), pl, [1.0], np.zeros(0))
    assert empty.time_s == 0.0 and empty.finish_s.shape == (0,)


def test_unlimited_link_has_no_utilization():
    A = np.array([[1.0, 1.0], [1.0, 0.0]])
    res = simulate(sp.csr_array(A), sp.identity(2, format="csr"), [4.0, np.inf], [2.0, 2.0])
    assert res.time_s == pytest.approx(1.0)
    assert res.peak_utilization == pytest.approx([1.0, 0.0])
    assert res.link_busy_s == pytest.approx([1.0, 1.0])


def test_zero_capacity_flow_never_finishes():
    fp, pl = one_link(1)
    with pytest.raises(ValueError, match="1 flows get rate 0 .*zero-capacity link 0"):
        simulate(fp, pl, [0.0], [1.0])


# --------------------------------------------------------------------------- certificate


def test_check_maxmin_finds_planted_violations():
    fp, pl, cap, w, m = random_instance(3, 20, 8)
    rate = maxmin_rates(fp, pl, cap, weights=w, multiplicity=m).rate_Bps
    assert check_maxmin(fp, pl, cap, rate, weights=w, multiplicity=m) == []
    up = check_maxmin(fp, pl, cap, rate * 1.1, weights=w, multiplicity=m)
    assert any("over its capacity" in s for s in up)
    down = check_maxmin(fp, pl, cap, rate * 0.9, weights=w, multiplicity=m)
    assert down and all("no saturated link" in s or "more flows" in s for s in down)


def test_check_maxmin_detects_unfair_split():
    fp, pl = one_link(2)
    assert check_maxmin(fp, pl, [10.0], [4.0, 6.0]) == [
        "flow 0 (4 B/s) has no saturated link on which its rate/weight is the largest"]


# --------------------------------------------------------------------------- scale and structure


def test_deterministic():
    fp, pl, cap, w, m = random_instance(11, 30, 20)
    size = np.linspace(1.0, 5.0, 30)
    a = simulate(fp, pl, cap, size, weights=w, multiplicity=m)
    b = simulate(fp, pl, cap, size, weights=w, multiplicity=m)
    for name in ("finish_s", "first_rates_Bps", "link_bytes", "peak_utilization", "link_busy_s"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    ra = maxmin_rates(fp, pl, cap, weights=w, multiplicity=m)
    rb = maxmin_rates(fp, pl, cap, weights=w, multiplicity=m)
    assert np.array_equal(ra.rate_Bps, rb.rate_Bps)
    assert np.array_equal(ra.bottleneck_link, rb.bottleneck_link)


def test_many_levels(solver_path):
    # Link i (capacity i+1) carries two own flows; one extra flow crosses all links.
    # The shared flow and link 0's own flows freeze at 1/3; link i > 0 then gives its
    # own flows (i + 1 - 1/3) / 2: 200 distinct levels.
    n = 200
    own = np.repeat(np.arange(n), 2)
    rows = np.concatenate([np.arange(2 * n), np.full(n, 2 * n)])
    cols = np.concatenate([own, np.arange(n)])
    A = sp.csr_array((np.ones(rows.size), (rows, cols)), shape=(2 * n + 1, n))
    # Factored through one piece per flow row, to exercise the piece path.
    fp = sp.identity(2 * n + 1, format="csr")
    cap = np.arange(1.0, n + 1)
    r = maxmin_rates(fp, A, cap)
    assert r.n_levels == n
    expect = np.concatenate([[1 / 3, 1 / 3], np.repeat((cap[1:] - 1 / 3) / 2, 2), [1 / 3]])
    assert r.rate_Bps == pytest.approx(expect, rel=1e-12)
    assert check_maxmin(fp, A, cap, r.rate_Bps) == []


def test_many_levels_random_pieces(round_path):
    rng = np.random.default_rng(0)
    F, K, L = 5000, 800, 300
    rows = np.repeat(np.arange(F), 3)
    fp = sp.csr_array((rng.uniform(0.2, 1, rows.size), (rows, rng.integers(0, K, rows.size))),
                      shape=(F, K))
    prow = np.repeat(np.arange(K), 2)
    pl = sp.csr_array((rng.uniform(0.2, 1, prow.size), (prow, rng.integers(0, L, prow.size))),
                      shape=(K, L))
    cap = rng.uniform(1.0, 100.0, L)
    r = maxmin_rates(fp, pl, cap)
    assert r.n_levels >= 100
    assert check_maxmin(fp, pl, cap, r.rate_Bps) == []


# --------------------------------------------------------------------------- memory


def test_estimate_grows_with_size():
    small = estimate_memory_bytes(n_flows=10, nnz_flow_piece=40, n_pieces=8, nnz_piece_link=20,
                                  n_links=6)
    big = estimate_memory_bytes(n_flows=10**6, nnz_flow_piece=4 * 10**6, n_pieces=8,
                                nnz_piece_link=20, n_links=6)
    assert isinstance(big, int) and big > small > 0


def test_too_large_names_the_bound():
    est = estimate_memory_bytes(n_flows=85_000_000, nnz_flow_piece=340_000_000, n_pieces=10**5,
                                nnz_piece_link=10**6, n_links=10**5)
    with pytest.raises(TooLarge, match=r"85,000,000 flows.*use the link-load bound \(--bound-only\)"):
        guard_memory(est, limit_bytes=1024, n_flows=85_000_000)


def test_guard_passes_small_problem_under_default_limit():
    guard_memory(estimate_memory_bytes(n_flows=10, nnz_flow_piece=10, n_pieces=1,
                                       nnz_piece_link=1, n_links=1))


def naive_finish_times(fp, pl, cap, size, w, m):
    """Reference event loop: re-solve the survivors from scratch with sliced rows."""
    F = fp.shape[0]
    w = np.ones(F) if w is None else w
    m = np.ones(F) if m is None else m
    left, rem, now = np.arange(F), size.astype(float).copy(), 0.0
    finish = np.zeros(F)
    while left.size:
        rate = maxmin_rates(fp[left], pl, cap, weights=w[left], multiplicity=m[left]).rate_Bps
        to_go = rem[left] / rate
        dt = to_go.min()
        done = to_go <= dt * (1 + 1e-9)
        now += dt
        finish[left[done]] = now
        rem[left] -= rate * dt
        left = left[~done]
    return finish


@pytest.mark.parametrize("seed", range(10))
def test_simulate_matches_naive_event_loop(seed, round_path, solver_path):
    fp, pl, cap, w, m = random_instance(seed, 30, 12)
    size = np.random.default_rng(100 + seed).choice([1.0, 2.0, 3.0, 5.0], 30)
    res = simulate(fp, pl, cap, size, weights=w, multiplicity=m)
    np.testing.assert_allclose(res.finish_s, naive_finish_times(fp, pl, cap, size, w, m),
                               rtol=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_simulate_many_events_matches_naive(seed, round_path):
    rng = np.random.default_rng(seed)
    F, K, L = 150, 40, 25
    rows = np.repeat(np.arange(F), 2)
    fp = sp.csr_array((rng.uniform(0.2, 1, rows.size), (rows, rng.integers(0, K, rows.size))),
                      shape=(F, K))
    prow = np.repeat(np.arange(K), 2)
    pl = sp.csr_array((rng.uniform(0.2, 1, prow.size), (prow, rng.integers(0, L, prow.size))),
                      shape=(K, L))
    cap = rng.uniform(1.0, 10.0, L)
    size = rng.uniform(1.0, 10.0, F)
    w = rng.choice([1.0, 3.0], F)
    res = simulate(fp, pl, cap, size, weights=w)
    assert res.events > 50
    np.testing.assert_allclose(res.finish_s, naive_finish_times(fp, pl, cap, size, w, None),
                               rtol=1e-9)
    # A link is busy until the last flow crossing it finishes.
    A = (fp @ pl).toarray()
    last = np.where(A > 0, res.finish_s[:, None], 0.0).max(axis=0)
    np.testing.assert_allclose(res.link_busy_s, last, rtol=1e-12)
    assert np.all(res.peak_utilization <= 1 + 1e-9)
    assert np.all(res.peak_utilization >= res.utilization - 1e-9)


# --------------------------------------------------------------------------- many-level cross-check


def reference_maxmin(A: np.ndarray, cap: np.ndarray, w: np.ndarray, m: np.ndarray,
                     rel_tol: float = 1e-9) -> np.ndarray:
    """Straightforward progressive filling on the explicit A, one level at a time."""
    F, L = A.shape
    rate = np.zeros(F)
    frozen = np.zeros(F, dtype=bool)
    crosses = A > 0
    while not frozen.all():
        live = ~frozen
        aw = (A[live] * (m[live] * w[live])[:, None]).sum(axis=0)
        used = (A[frozen] * (m[frozen] * rate[frozen])[:, None]).sum(axis=0)
        active = crosses[live].any(axis=0) & np.isfinite(cap)
        sat = np.full(L, np.inf)
        sat[active] = np.maximum(cap[active] - used[active], 0.0) / aw[active]
        t = sat.min()
        assert np.isfinite(t)
        hit = live & crosses[:, sat <= t * (1 + rel_tol)].any(axis=1)
        rate[hit] = w[hit] * t
        frozen |= hit
    return rate


def chip_instance(seed: int, n_flows: int, chips: int, n_spine: int = 8, fan: int = 3):
    """Chips with up/down pieces unevenly split over ``fan`` links of random capacity
    (continuous: nearly every link its own level) and a spine piece per flow: many
    levels, most rounds independent of each other, as in benchmarks/bench_solver.py."""
    rng = np.random.default_rng(seed)
    n_chip_links = 2 * chips * fan
    n_links = n_chip_links + 2 * n_spine
    cap = np.concatenate([rng.uniform(10.0, 100.0, n_chip_links),
                          rng.uniform(2000.0, 8000.0, 2 * n_spine)])
    rows = np.concatenate([np.repeat(np.arange(2 * chips), fan),
                           2 * chips + np.repeat(np.arange(n_spine), 2)])
    vals = rng.uniform(0.5, 1.5, n_links)
    pl = sp.csr_array((vals, (rows, np.arange(n_links))), shape=(2 * chips + n_spine, n_links))
    s = rng.integers(0, chips, n_flows)
    d = (s + rng.integers(1, chips, n_flows)) % chips
    spine = 2 * chips + rng.integers(0, n_spine, n_flows)
    cols = np.sort(np.stack([s, chips + d, spine], axis=1), axis=1)
    fp = sp.csr_array((rng.uniform(0.5, 1.0, cols.size), cols.ravel(),
                       np.arange(0, cols.size + 1, 3)), shape=(n_flows, 2 * chips + n_spine))
    w = rng.choice([1.0, 2.0, 4.0], n_flows)
    m = rng.integers(1, 4, n_flows).astype(float)
    return fp, pl, cap, w, m


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("n_flows, chips", [(20, 8), (150, 40), (400, 100), (900, 200)])
def test_many_levels_match_reference_filling(seed, n_flows, chips, monkeypatch, solver_path):
    fp, pl, cap, w, m = chip_instance(seed, n_flows, chips)
    # Count the passes that freeze several rounds at once, so the check covers them.
    multi = []
    batch = solver._Fill._freeze_rounds
    monkeypatch.setattr(solver._Fill, "_freeze_rounds",
                        lambda self, lv, *a: multi.append(len(lv)) or batch(self, lv, *a))
    r = maxmin_rates(fp, pl, cap, weights=w, multiplicity=m)
    if n_flows >= 150 and solver_path == "numpy":
        assert sum(multi) > r.n_levels // 2
    ref = reference_maxmin((fp @ pl).toarray(), cap, w, m)
    np.testing.assert_allclose(r.rate_Bps, ref, rtol=1e-9)
    assert r.n_levels > n_flows // 10
    assert check_maxmin(fp, pl, cap, r.rate_Bps, weights=w, multiplicity=m) == []
    # Each flow's bottleneck is a saturated link it crosses, on which its level is the top one.
    A = (fp @ pl).toarray()
    f = np.arange(n_flows)
    b = r.bottleneck_link
    assert np.all(A[f, b] > 0)
    load = A.T @ (m * r.rate_Bps)
    np.testing.assert_allclose(load[b], cap[b], rtol=1e-9)
    level = r.rate_Bps / w
    top = np.where(A > 0, level[:, None], -np.inf).max(axis=0)
    np.testing.assert_allclose(level, top[b], rtol=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_random_ties_match_reference_filling(seed, solver_path):
    # Few distinct capacities: many links tie within rel_tol and saturate in one round.
    fp, pl, cap, w, m = random_instance(1000 + seed, 400, 120)
    ones = np.ones(400)
    w = ones if w is None else w
    m = ones if m is None else m
    r = maxmin_rates(fp, pl, cap, weights=w, multiplicity=m)
    np.testing.assert_allclose(r.rate_Bps, reference_maxmin((fp @ pl).toarray(), cap, w, m),
                               rtol=1e-9)


def reference_finish_times(fp, pl, cap, size, w, m):
    """Event loop over reference_maxmin on the explicit A (independent of the solver)."""
    A = (fp @ pl).toarray()
    left, rem, now = np.arange(A.shape[0]), size.astype(float).copy(), 0.0
    finish = np.zeros(A.shape[0])
    while left.size:
        rate = reference_maxmin(A[left], cap, w[left], m[left])
        to_go = rem[left] / rate
        dt = to_go.min()
        done = to_go <= dt * (1 + 1e-9)
        now += dt
        finish[left[done]] = now
        rem[left] -= rate * dt
        left = left[~done]
    return finish


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("sizes", ["equal", "mixed"])
def test_simulate_many_levels_matches_reference(seed, sizes, monkeypatch, solver_path):
    # Equal sizes: the fastest finish first and reopen nothing (events taken together);
    # mixed sizes: finishing flows froze at middling levels and events redo rounds.
    fp, pl, cap, w, m = chip_instance(seed, 120, 30)
    rng = np.random.default_rng(seed)
    if sizes == "equal":
        size, w = np.full(120, 5.0), np.ones(120)
    else:
        size = rng.choice([1.0, 2.0, 4.0], 120)
    calls = {"drop": 0, "retire": 0}
    for name in calls:
        def spy(self, *a, _name=name, _f=getattr(solver._Fill, name)):
            calls[_name] += 1
            return _f(self, *a)
        monkeypatch.setattr(solver._Fill, name, spy)
    res = simulate(fp, pl, cap, size, weights=w, multiplicity=m)
    assert calls["drop"] > 0 and (sizes == "equal" or calls["retire"] > 0)
    ref = reference_finish_times(fp, pl, cap, size, w, m)
    np.testing.assert_allclose(res.finish_s, ref, rtol=1e-9)
    assert res.events > 20
    A = (fp @ pl).toarray()
    last = np.where(A > 0, res.finish_s[:, None], 0.0).max(axis=0)
    np.testing.assert_allclose(res.link_busy_s, last, rtol=1e-12)
    assert np.all(res.peak_utilization <= 1 + 1e-9)
    np.testing.assert_allclose(res.first_rates_Bps, reference_maxmin(A, cap, w, m), rtol=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_many_levels_without_tolerance_and_unlimited_links(seed, solver_path):
    # rel_tol=0 (no grouping of near levels) and a few unlimited links among the chips'.
    fp, pl, cap, w, m = chip_instance(50 + seed, 300, 60)
    cap = cap.copy()
    cap[np.random.default_rng(seed).choice(cap.size, 20, replace=False)] = np.inf
    A = (fp @ pl).toarray()
    keep = np.isfinite(np.where(A > 0, cap[None, :], np.inf).min(axis=1))   # routable rows only
    fp, w, m = fp[np.flatnonzero(keep)], w[keep], m[keep]
    r = maxmin_rates(fp, pl, cap, weights=w, multiplicity=m, rel_tol=0.0)
    ref = reference_maxmin((fp @ pl).toarray(), cap, w, m, rel_tol=0.0)
    np.testing.assert_allclose(r.rate_Bps, ref, rtol=1e-9)
    assert check_maxmin(fp, pl, cap, r.rate_Bps, weights=w, multiplicity=m) == []


# --------------------------------------------------------------------------- compiled filling


def _both_paths(monkeypatch, run):
    """``run()`` on the numpy passes and on the compiled kernel (from round 0)."""
    pytest.importorskip("numba")
    monkeypatch.setattr(solver, "_USE_KERNEL", False)
    a = run()
    monkeypatch.setattr(solver, "_USE_KERNEL", True)
    monkeypatch.setattr(solver, "_KERNEL_ROUNDS_ANY", 0)
    monkeypatch.setattr(solver, "_KERNEL_ROWS", 0)   # and its column structure (_columns)
    calls = []
    kernel = solver._Fill._run_kernel
    monkeypatch.setattr(solver._Fill, "_run_kernel",
                        lambda self, *x: calls.append(1) or kernel(self, *x))
    b = run()
    assert calls  # the compiled path did run
    return a, b


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("rel_tol", [1e-9, 0.0, 1e-3])
def test_kernel_takes_the_numpy_rounds(seed, rel_tol, monkeypatch):
    # Same rounds, levels and bottleneck links (ties, weights, multiplicities) on both paths.
    for fp, pl, cap, w, m in (chip_instance(seed, 300, 60), random_instance(2000 + seed, 200, 60)):
        a, b = _both_paths(monkeypatch, lambda: maxmin_rates(fp, pl, cap, weights=w,
                                                             multiplicity=m, rel_tol=rel_tol))
        assert a.n_levels == b.n_levels
        np.testing.assert_allclose(b.rate_Bps, a.rate_Bps, rtol=1e-12)
        assert np.array_equal(a.bottleneck_link, b.bottleneck_link)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("sizes", ["equal", "mixed"])
def test_kernel_simulates_as_numpy(seed, sizes, monkeypatch):
    # Events, rounds (counted over rollbacks), finish times, peaks and busy times agree.
    fp, pl, cap, w, m = chip_instance(10 + seed, 150, 40)
    rng = np.random.default_rng(seed)
    size = np.full(150, 3.0) if sizes == "equal" else rng.choice([1.0, 2.0, 4.0], 150)
    a, b = _both_paths(monkeypatch, lambda: simulate(fp, pl, cap, size, weights=w,
                                                     multiplicity=m))
    assert (a.events, a.n_levels) == (b.events, b.n_levels)
    for name in ("finish_s", "first_rates_Bps", "peak_utilization", "link_busy_s"):
        np.testing.assert_allclose(getattr(b, name), getattr(a, name), rtol=1e-12)


def test_without_numba_the_numpy_passes_run(monkeypatch):
    # numba missing: _kernel_module() is None and the solve is unchanged.
    monkeypatch.setattr(solver, "_kernels", False)
    monkeypatch.setattr(solver, "_KERNEL_ROUNDS_ANY", 0)
    assert solver._kernel_module() is None
    fp, pl, cap, w, m = chip_instance(3, 150, 40)
    r = maxmin_rates(fp, pl, cap, weights=w, multiplicity=m)
    ref = reference_maxmin((fp @ pl).toarray(), cap, w, m)
    np.testing.assert_allclose(r.rate_Bps, ref, rtol=1e-9)


# --------------------------------------------------------------------------- quiet tail


def _loop_and_tail(monkeypatch, run):
    """``run()`` with every event taken by the loop, then with the all-at-once tail."""
    monkeypatch.setattr(solver, "_TAIL_MIN_ROWS", np.inf)
    a = run()
    monkeypatch.setattr(solver, "_TAIL_MIN_ROWS", 0)
    calls = []
    tail = solver._quiet_tail
    monkeypatch.setattr(solver, "_quiet_tail", lambda *x: calls.append(tail(*x)) or calls[-1])
    b = run()
    return a, b, calls


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("n_flows, chips", [(60, 16), (200, 50), (600, 150)])
@pytest.mark.parametrize("weights", ["equal", "mixed"])
def test_quiet_tail_equals_the_event_loop(seed, n_flows, chips, weights, monkeypatch):
    # Equal sizes: every event reopens nothing, and the tail takes them all at once;
    # results (finish times, events, rounds, busy times, peaks) are bit-identical.
    fp, pl, cap, w, m = chip_instance(40 + seed, n_flows, chips)
    w = None if weights == "equal" else w
    size = np.full(n_flows, 5.0)
    a, b, calls = _loop_and_tail(monkeypatch, lambda: simulate(fp, pl, cap, size, weights=w,
                                                              multiplicity=m))
    if w is None:  # equal weights and sizes: rates rise with the round, all quiet
        assert calls and calls[0] is not None  # the tail did take them
    assert (a.events, a.n_levels) == (b.events, b.n_levels)
    for name in ("finish_s", "first_rates_Bps", "peak_utilization", "link_busy_s", "utilization"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


@pytest.mark.parametrize("seed", range(3))
def test_quiet_tail_refuses_when_an_event_reopens_flows(seed, monkeypatch):
    # Mixed sizes: a slow flow frozen early can finish before a fast one frozen late,
    # reopening it; the tail refuses (or takes only an all-quiet remainder) and the
    # loop's results stand.
    fp, pl, cap, w, m = chip_instance(60 + seed, 120, 30)
    size = np.random.default_rng(seed).choice([1.0, 2.0, 4.0, 9.0], 120)
    a, b, calls = _loop_and_tail(monkeypatch, lambda: simulate(fp, pl, cap, size, weights=w,
                                                              multiplicity=m))
    assert calls and calls[0] is None  # the first fill's events are not all quiet
    assert (a.events, a.n_levels) == (b.events, b.n_levels)
    for name in ("finish_s", "peak_utilization", "link_busy_s"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


def test_quiet_tail_matches_a_closed_form(monkeypatch):
    # Flows 0, 1 share a 10 B/s link (5 B/s each, frozen second), flow 2 is alone on a
    # 4 B/s link (frozen first): 10 B each, so 0 and 1 finish at 2 s, then 2 at 2.5 s.
    monkeypatch.setattr(solver, "_TAIL_MIN_ROWS", 0)
    fp = sp.csr_array(np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
    pl = sp.csr_array(np.eye(2))
    r = simulate(fp, pl, [10.0, 4.0], [10.0, 10.0, 10.0])
    assert r.finish_s.tolist() == [2.0, 2.0, 2.5]
    assert (r.events, r.n_levels) == (2, 2)
    assert r.link_busy_s.tolist() == [2.0, 2.5]


# --------------------------------------------------------------------------- parallel links


def test_group_links_finds_proportional_columns():
    # Links 0, 1 and 3 carry pieces 0 and 2 in proportion 1:2 (scaled 1, 0.5, 3); link 2
    # carries the same pieces 1:3 (same length, first and last piece: not proportional);
    # link 4 carries nothing.
    Q = sp.csc_array(np.array([[1.0, 0.5, 1.0, 3.0, 0.0],
                               [0.0, 0.0, 0.0, 0.0, 0.0],
                               [2.0, 1.0, 3.0, 6.0, 0.0]])).tocsr()
    cap = np.array([10.0, 4.0, 7.0, 33.0, 5.0])
    lg, _ = solver._group_links(Q, cap)
    assert lg.group.tolist() == [0, 0, 1, 0, -1]
    assert lg.scale.tolist() == [1.0, 0.5, 1.0, 3.0, 0.0]
    # group 0 saturates when its load reaches min(10/1, 4/0.5, 33/3) = 8, at link 1
    assert lg.cap.tolist() == [8.0, 7.0] and lg.rep.tolist() == [1, 2]
    assert lg.Q.toarray().tolist() == [[1.0, 1.0], [0.0, 0.0], [2.0, 3.0]]
    assert solver._group_links(sp.csr_array(np.eye(3)), np.ones(3))[0] is None  # nothing to group


def _grouped_and_not(monkeypatch, run):
    monkeypatch.setattr(solver, "_GROUP_LINKS", False)
    a = run()
    monkeypatch.setattr(solver, "_GROUP_LINKS", True)
    calls = []
    group = solver._group_links
    monkeypatch.setattr(solver, "_group_links", lambda *x: calls.append(group(*x)) or calls[-1])
    b = run()
    assert calls and calls[0][0] is not None  # links were grouped
    return a, b


def parallel_instance(seed: int, n_flows: int, chips: int):
    """chip_instance's fabric with every chip link doubled by a parallel twin (a scaled copy
    of its column, its own capacity) and a spine link shared by two pieces in proportion."""
    fp, pl, cap, w, m = chip_instance(seed, n_flows, chips)
    rng = np.random.default_rng(seed)
    K, L = pl.shape
    twin = pl.toarray() * rng.uniform(0.5, 2.0, L)[None, :]
    extra = np.zeros((K, 1))
    extra[[0, K - 1], 0] = [1.0, 2.5]
    pl2 = sp.csr_array(np.hstack([pl.toarray(), twin, extra, 2 * extra]))
    cap2 = np.concatenate([cap, rng.uniform(10.0, 100.0, L), [60.0, 90.0]])
    return fp, pl2, cap2, w, m


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n_flows, chips", [(30, 8), (200, 50), (600, 120)])
def test_grouped_links_solve_as_every_link(seed, n_flows, chips, monkeypatch):
    fp, pl, cap, w, m = parallel_instance(seed, n_flows, chips)
    a, b = _grouped_and_not(monkeypatch, lambda: maxmin_rates(fp, pl, cap, weights=w, multiplicity=m))
    np.testing.assert_allclose(b.rate_Bps, a.rate_Bps, rtol=1e-12)
    assert a.n_levels == b.n_levels
    assert check_maxmin(fp, pl, cap, b.rate_Bps, weights=w, multiplicity=m) == []
    # each flow's bottleneck is a link it crosses, saturated, as on the ungrouped solve
    A = (fp @ pl).toarray()
    assert (A[np.arange(n_flows), b.bottleneck_link] > 0).all()
    load = (A * (b.rate_Bps * m)[:, None]).sum(axis=0)
    np.testing.assert_allclose(load[b.bottleneck_link], cap[b.bottleneck_link], rtol=1e-9)
    size = np.random.default_rng(seed).choice([1.0, 2.0, 4.0], n_flows)
    a, b = _grouped_and_not(monkeypatch, lambda: simulate(fp, pl, cap, size, weights=w, multiplicity=m))
    assert (a.events, a.n_levels) == (b.events, b.n_levels)
    for name in ("finish_s", "first_rates_Bps", "peak_utilization", "link_busy_s", "utilization"):
        np.testing.assert_allclose(getattr(b, name), getattr(a, name), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("seed", range(4))
def test_columns_and_piece_weights_equal_scipys(seed, monkeypatch):
    # The kernel's counting sort: scipy's CSC structure, and P.T @ (m w) bit for bit.
    pytest.importorskip("numba")
    monkeypatch.setattr(solver, "_KERNEL_ROWS", 0)
    fp, pl, cap, w, m = random_instance(seed, 60, 12)
    F = fp.shape[0]
    mw = (np.ones(F) if w is None else w) * (np.ones(F) if m is None else m)
    unit = seed == 3
    if unit:
        fp = sp.csr_array((np.ones(fp.nnz), fp.indices, fp.indptr), shape=fp.shape)
    ref = fp.tocsc()
    for ptr in (None, ref.indptr.astype(np.int64)):   # counted here, or given
        c = solver._columns(fp, mw, unit, ptr=ptr)
        assert isinstance(c, solver._Cols)
        assert np.array_equal(c.indptr, ref.indptr) and np.array_equal(c.indices, ref.indices)
        assert np.array_equal(c.piece_w, fp.T @ mw)


@pytest.mark.parametrize("seed", range(4))
def test_row_order_groups_rows_by_their_likeliest_piece(seed, monkeypatch):
    # order is a permutation, at its inverse, P[order] the rows in that order (and w),
    # rows come grouped by their piece of least cap / (entries on the link) over its
    # links, and col_ptr is P's column pointers.
    pytest.importorskip("numba")
    monkeypatch.setattr(solver, "_KERNEL_ROWS", 0)
    monkeypatch.setattr(solver, "_MIN_RUN", 10**9)   # regroup whatever the given order
    fp, pl, cap = random_instance(seed, 60, 12)[:3]
    F = fp.shape[0]
    unit = seed == 3   # whole rows on their pieces (values all 1)
    if unit:
        fp = sp.csr_array((np.ones(fp.nnz), fp.indices, fp.indptr), shape=fp.shape)
    w = np.random.default_rng(seed).uniform(0.5, 2.0, F)
    order, at, P2, w2, col_ptr = solver._row_order(fp, pl, cap, unit, w)
    assert np.array_equal(np.sort(order), np.arange(F)) and np.array_equal(at[order], np.arange(F))
    ref = fp[order]
    assert np.array_equal(P2.indptr, ref.indptr) and np.array_equal(P2.indices, ref.indices)
    assert np.array_equal(P2.data, ref.data) and np.array_equal(w2, w[order])
    assert np.array_equal(col_ptr, fp.tocsc().indptr)
    load = pl.T @ np.bincount(fp.indices, minlength=fp.shape[1]).astype(float)
    with np.errstate(divide="ignore"):
        per_link = np.where(load > 0, cap / load, np.inf)
    plc = pl.tocsr()
    piece_level = np.array([per_link[plc.indices[plc.indptr[q]:plc.indptr[q + 1]]].min(initial=np.inf)
                            for q in range(plc.shape[0])])
    key = [fp.indices[fp.indptr[f]:fp.indptr[f + 1]][np.argmin(piece_level[
        fp.indices[fp.indptr[f]:fp.indptr[f + 1]]])] for f in order]
    assert np.all(np.diff(key) >= 0)
    assert np.all(np.diff(order)[np.diff(key) == 0] > 0)   # given order within a key
    # rows given in runs of one key stay as they are
    monkeypatch.setattr(solver, "_MIN_RUN", 1)
    assert solver._row_order(P2, pl, cap, unit, w2) is None


@pytest.mark.parametrize("seed", range(3))
def test_row_order_changes_only_the_last_bits(seed, monkeypatch):
    # Grouping the rows changes the order a piece's flows are summed in, not the
    # rounds, bottlenecks or events; rates and times agree to roundoff (empty flows
    # included, so simulate compacts rows it regrouped).
    pytest.importorskip("numba")
    monkeypatch.setattr(solver, "_KERNEL_ROUNDS_ANY", 0)
    monkeypatch.setattr(solver, "_KERNEL_ROWS", 0)
    fp, pl, cap, w, m = chip_instance(20 + seed, 400, 60)
    out = []
    for min_run in (0, 10**9):   # never / always regrouped
        monkeypatch.setattr(solver, "_MIN_RUN", min_run)
        out.append(maxmin_rates(fp, pl, cap, weights=w, multiplicity=m))
        size = np.random.default_rng(seed).choice([0.0, 1.0, 2.0, 4.0], 400)
        out.append(simulate(fp, pl, cap, size, weights=w, multiplicity=m))
    a, sa, b, sb = out
    assert a.n_levels == b.n_levels and np.array_equal(a.bottleneck_link, b.bottleneck_link)
    np.testing.assert_allclose(b.rate_Bps, a.rate_Bps, rtol=1e-12)
    assert check_maxmin(fp, pl, cap, b.rate_Bps, weights=w, multiplicity=m) == []
    assert (sa.events, sa.n_levels) == (sb.events, sb.n_levels)
    for name in ("finish_s", "first_rates_Bps", "peak_utilization", "link_busy_s", "utilization"):
        np.testing.assert_allclose(getattr(sb, name), getattr(sa, name), rtol=1e-12, atol=1e-300)


def test_read_only_and_strided_inputs_reuse_the_compiled_kernels(monkeypatch):
    # Weights and multiplicities arrive contiguous and writeable at the kernels (a copy
    # only when needed), so a caller's read-only or strided array does not compile
    # another specialization of each kernel (seconds) and gives the same answer.
    pytest.importorskip("numba")
    kernels = solver._kernel_module()
    monkeypatch.setattr(solver, "_KERNEL_ROWS", 0)
    monkeypatch.setattr(solver, "_MIN_RUN", 10**9)   # regrouped: every kernel runs
    fp, pl, cap, w, m = chip_instance(5, 400, 60)
    ref = maxmin_rates(fp, pl, cap, weights=w, multiplicity=m)
    names = ("row_order", "columns", "fill", "unpermute")
    before = {name: len(getattr(kernels, name).signatures) for name in names}
    w_ro, m_ro = w.copy(), m.copy()
    w_ro.flags.writeable = m_ro.flags.writeable = False
    w_strided = np.repeat(w, 2)[::2]
    for weights, mult in ((w_ro, m_ro), (w_strided, m)):
        got = maxmin_rates(fp, pl, cap, weights=weights, multiplicity=mult)
        assert np.array_equal(got.rate_Bps, ref.rate_Bps)
        assert np.array_equal(got.bottleneck_link, ref.bottleneck_link)
    assert {name: len(getattr(kernels, name).signatures) for name in names} == before
    assert not w_ro.flags.writeable   # the caller's array is left as it was
