"""MoE dispatch/combine with one copy per (token, destination rank) (``dedup=rank``, DeepEP-style)
against one copy per (token, expert) (``dedup=expert``, the plain all-to-all-v)."""
from fractions import Fraction
from math import comb

import numpy as np
import pytest

from fabricsim.collectives.traffic import MoESpec, moe_traffic, rank_reach_probability
from fabricsim.collectives.traffic.moe import _placement
from fabricsim.topo.errors import BadInput


def _spec(text: str, **kw) -> MoESpec:
    s = MoESpec.parse(text)
    return s.__class__(**{**s.__dict__, **kw})


def _reach_exact(E: int, k: int, n: int) -> Fraction:
    """P(at least one of k distinct experts, uniform among E, is one of a rank's n): hypergeometric."""
    return 1 - Fraction(comb(E - n, k), comb(E, k))


# ----------------------------------------------------------------------------- closed form
@pytest.mark.parametrize("E,k,R", [(256, 8, 8), (256, 8, 32), (256, 8, 64), (128, 4, 16), (64, 6, 4),
                                   (160, 6, 16), (384, 8, 48), (32, 32, 8)])
def test_balanced_rank_copies_are_the_hypergeometric_expectation(E, k, R):
    """Each source row of the balanced dedup=rank matrix is tokens_r x (1 - C(E - E/R, k) / C(E, k))."""
    T = 64 * R
    t = moe_traffic(MoESpec.parse(f"experts={E},top_k={k},tokens={T},hidden=3,skew=balanced"), R)
    p = float(_reach_exact(E, k, E // R))
    assert np.allclose(t.matrix, T // R * p * 3, rtol=1e-12, atol=0)
    # distinct ranks per token and the byte ratio to one copy per expert
    assert t.bytes_total == pytest.approx(T * R * p * 3, rel=1e-12)
    expert = moe_traffic(_spec(f"experts={E},top_k={k},tokens={T},hidden=3,skew=balanced", dedup="expert"), R)
    assert expert.bytes_total / t.bytes_total == pytest.approx(k / (R * p), rel=1e-12)


def test_deepseek_v3_ep8_ratio():
    """256 experts, top-8, EP8 (32 experts a rank): 5.2947 ranks per token, 1.511x fewer bytes."""
    exact = 8 * _reach_exact(256, 8, 32)
    assert float(exact) == pytest.approx(5.29465200038, rel=1e-11)
    t = moe_traffic(MoESpec.parse("experts=256,top_k=8,tokens=8192,hidden=7168,skew=balanced"), 8)
    assert 8192 * 8 * 7168 / t.bytes_total == pytest.approx(8 / float(exact), rel=1e-12)
    assert round(8 / float(exact), 3) == 1.511


def test_uneven_round_robin_uses_each_ranks_expert_count():
    """12 experts round-robin on 8 ranks: ranks 0-3 hold 2, ranks 4-7 hold 1."""
    s = MoESpec.parse("experts=12,top_k=3,tokens=80,hidden=1,skew=balanced")
    p = rank_reach_probability(s, 8)
    want = [float(_reach_exact(12, 3, 2))] * 4 + [float(_reach_exact(12, 3, 1))] * 4
    assert np.allclose(p, want, rtol=1e-14)
    assert np.allclose(moe_traffic(s, 8).matrix, 10 * np.array(want)[None, :])
    # more ranks than experts: ranks without experts receive nothing
    far = moe_traffic(MoESpec.parse("experts=4,top_k=2,tokens=64,hidden=1,skew=balanced"), 8)
    assert far.matrix[:, 4:].sum() == 0 and np.allclose(far.matrix[:, :4], 8 * 0.5)


def test_sampled_uniform_matches_the_expectation_on_average():
    """A uniform router's sample averages to the closed form (200k tokens: within 0.5%)."""
    t = moe_traffic(MoESpec.parse("experts=256,top_k=8,tokens=200000,hidden=1,seed=7"), 8)
    per_token = t.bytes_total / 200000
    assert per_token == pytest.approx(8 * float(_reach_exact(256, 8, 32)), rel=5e-3)
    assert per_token != 8 * float(_reach_exact(256, 8, 32))          # a sample, not the expectation


# ----------------------------------------------------------------------------- dedup=expert is unchanged
def _draws(spec: MoESpec, ep: int):
    """Per-token (source rank, experts) by the module's sampler, restated one token at a time."""
    rng = np.random.default_rng(spec.seed)
    per_rank = np.full(ep, spec.tokens // ep)
    per_rank[: spec.tokens % ep] += 1
    src = np.repeat(np.arange(ep), per_rank)
    w = None
    if spec.skew.startswith("zipf:"):
        w = np.arange(1, spec.experts + 1, dtype=np.float64) ** -float(spec.skew[5:])
    keys = rng.standard_exponential(size=(len(src), spec.experts), dtype=np.float32)
    if w is not None:
        keys *= (1.0 / w).astype(np.float32)
    for s, row in zip(src, keys):
        yield int(s), np.argpartition(row, spec.top_k - 1)[: spec.top_k]


@pytest.mark.parametrize("skew", ["uniform", "zipf:1.2"])
@pytest.mark.parametrize("placement", ["round-robin", "contiguous"])
def test_both_dedups_count_the_same_draws_token_by_token(skew, placement):
    """dedup=expert counts every (token, expert) of the draws (today's matrix); dedup=rank
    counts each token once per distinct home rank of its experts."""
    text = f"experts=32,top_k=6,tokens=300,hidden=2,skew={skew},seed=5,placement={placement},shared=0"
    ep = 8
    home = _placement(MoESpec.parse(text), ep)
    by_expert, by_rank = np.zeros((ep, ep)), np.zeros((ep, ep))
    for s, experts in _draws(MoESpec.parse(text), ep):
        for e in experts:
            by_expert[s, home[e]] += 2
        for r in set(home[experts].tolist()):
            by_rank[s, r] += 2
    assert np.array_equal(moe_traffic(_spec(text, dedup="expert"), ep).matrix, by_expert)
    assert np.array_equal(moe_traffic(_spec(text, dedup="rank"), ep).matrix, by_rank)


def test_dedup_expert_balanced_is_the_uniform_all_to_all():
    t = moe_traffic(MoESpec.parse("experts=256,top_k=8,tokens=1024,hidden=7168,skew=balanced,dedup=expert"), 16)
    assert np.allclose(t.matrix, 1024 / 16 * 8 / 16 * 7168, rtol=1e-12)
    assert t.bytes_total == 1024 * 8 * 7168


# ----------------------------------------------------------------------------- orderings
@pytest.mark.parametrize("skew", ["uniform", "balanced", "zipf:1.0", "zipf:2.5"])
@pytest.mark.parametrize("ep,shared", [(4, 0), (16, 1), (64, 2)])
def test_rank_copies_never_exceed_expert_copies(skew, ep, shared):
    text = f"experts=256,top_k=8,tokens=2048,hidden=16,skew={skew},shared={shared},seed=2"
    r = moe_traffic(_spec(text, dedup="rank"), ep)
    e = moe_traffic(_spec(text, dedup="expert"), ep)
    assert np.all(r.matrix <= e.matrix + 1e-9)
    assert r.bytes_total < e.bytes_total and r.bytes_network <= e.bytes_network + 1e-6
    # every token still reaches at least one rank (itself, with a shared expert)
    assert r.bytes_total >= 2048 * 16 - 1e-6


@pytest.mark.parametrize("skew", ["uniform", "balanced", "zipf:1.5"])
@pytest.mark.parametrize("placement", ["round-robin", "contiguous"])
def test_one_expert_per_rank_dedups_nothing(skew, placement):
    text = f"experts=16,top_k=4,tokens=512,hidden=8,skew={skew},placement={placement},seed=9"
    r = moe_traffic(_spec(text, dedup="rank"), 16)
    e = moe_traffic(_spec(text, dedup="expert"), 16)
    assert np.allclose(r.matrix, e.matrix, rtol=1e-12, atol=0)
    assert r.bytes_total == pytest.approx(e.bytes_total, rel=1e-12)


def test_combine_mirrors_dispatch():
    text = "experts=64,top_k=6,tokens=999,hidden=4,seed=1,skew=zipf:1.1"
    d = moe_traffic(MoESpec.parse(text), 8)
    c = moe_traffic(MoESpec.parse(text + ",phase=combine"), 8)
    assert np.array_equal(c.matrix, d.matrix.T) and c.imbalance == d.imbalance
    assert (c.bytes_total, c.bytes_local, c.bytes_network) == (d.bytes_total, d.bytes_local, d.bytes_network)


def test_shared_experts_add_one_home_copy_per_token():
    """With a shared expert every token has exactly one copy at home, however many local experts it picked."""
    text = "experts=64,top_k=8,tokens=800,hidden=1,seed=4"
    with_shared = moe_traffic(MoESpec.parse(text + ",shared=2"), 8)
    without = moe_traffic(MoESpec.parse(text), 8)
    assert np.array_equal(np.diag(with_shared.matrix), np.full(8, 100.0))
    assert np.all(np.diag(without.matrix) < 100)
    off = ~np.eye(8, dtype=bool)
    assert np.array_equal(with_shared.matrix[off], without.matrix[off])
    assert with_shared.bytes_network == without.bytes_network


def test_default_is_rank_and_bad_dedup_is_one_line():
    assert MoESpec.parse("experts=8,top_k=2,tokens=8,hidden=1").dedup == "rank"
    with pytest.raises(BadInput, match=r"moe dedup='per-node'; choose one of: rank, expert, node") as exc:
        MoESpec.parse("experts=8,top_k=2,tokens=8,hidden=1,dedup=per-node")
    assert "\n" not in str(exc.value)
