"""routing.core's breadth-first levels kept per search graph: the same levels as a fresh search, and
callers' writes to what it returns do not reach the store."""
import numpy as np
import scipy.sparse as sp

from fabricsim.topo.routing import core


def _ring_with_chords(n: int, seed: int) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    u = np.concatenate([np.arange(n), rng.integers(0, n, n // 4)])
    v = np.concatenate([(np.arange(n) + 1) % n, rng.integers(0, n, n // 4)])
    keep = u != v
    return sp.csr_matrix((np.ones(keep.sum()), (u[keep], v[keep])), shape=(n, n))


def test_kept_levels_equal_a_fresh_search_and_survive_writes():
    core._LEVELS.clear()
    S = _ring_with_chords(1500, 0)
    roots = np.array([5, 17, 5, 900])
    fresh = core._bfs_levels(S, roots, 1400)
    got = core._hop_levels(S, roots, 1400, True)
    assert np.array_equal(got, fresh)
    got[:] = 7                                             # a caller writes into its copy
    again = core._hop_levels(S, np.array([900, 5, 33]), 1400, True)
    assert np.array_equal(again, core._bfs_levels(S, np.array([900, 5, 33]), 1400))
    # another graph (a chord less) is searched anew, not answered from the first one's store
    T = _ring_with_chords(1500, 1)
    assert np.array_equal(core._hop_levels(T, roots, 1400, True), core._bfs_levels(T, roots, 1400))


def test_kept_levels_respect_the_cell_bound(monkeypatch):
    core._LEVELS.clear()
    monkeypatch.setattr(core, "_LEVELS_KEPT_CELLS", 3 * 1500)
    S = _ring_with_chords(1500, 2)
    for roots in ([1, 2], [3, 4], [1, 2, 3, 4, 5]):
        r = np.array(roots)
        assert np.array_equal(core._hop_levels(S, r, 1500, True), core._bfs_levels(S, r, 1500))
        assert sum(len(v) for v in core._LEVELS.values()) * 1500 <= 3 * 1500
