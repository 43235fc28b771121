"""Group-limited routing (DeepSeek-V3's router: a token picks topk_groups of groups groups of consecutive
experts, then its top_k among their experts): closed forms, the unlimited case, sampled against balanced."""
from math import comb

import numpy as np
import pytest

from fabricsim.collectives.traffic import MoESpec, moe_traffic
from fabricsim.collectives.traffic.moe import _miss, rank_reach_probability
from fabricsim.topo.errors import BadInput

BASE = "experts=256,top_k=8,hidden=7168"


@pytest.mark.parametrize("dedup", ["rank", "node", "expert"])
@pytest.mark.parametrize("skew", ["balanced", "uniform"])
def test_no_limit_is_the_plain_router(dedup, skew):
    ep = 32
    a = moe_traffic(MoESpec.parse(f"{BASE},tokens={ep * 256},skew={skew},dedup={dedup}"), ep)
    for g in ("groups=8,topk_groups=8", "groups=8,topk_groups=0", "groups=1"):
        b = moe_traffic(MoESpec.parse(f"{BASE},tokens={ep * 256},skew={skew},dedup={dedup},{g}"), ep)
        np.testing.assert_array_equal(b.matrix, a.matrix)


@pytest.mark.parametrize("G, gk", [(8, 4), (8, 2), (4, 3), (16, 4)])
def test_a_whole_group_is_needed_with_probability_picked_times_hit(G, gk):
    """A set that is exactly one group: picked with probability gk / G, then hit unless the k experts avoid
    its E/G among the gk E/G selectable."""
    spec = MoESpec.parse(f"{BASE},tokens=8,groups={G},topk_groups={gk}")
    size = 256 // G
    want = gk / G * (1 - comb(gk * size - size, 8) / comb(gk * size, 8))
    assert 1 - _miss(spec, np.arange(size)) == pytest.approx(want, rel=1e-12)
    # every expert is still picked with probability k / E (the groups are symmetric)
    assert 1 - _miss(spec, np.array([5])) == pytest.approx(8 / 256, rel=1e-12)
    # the empty set is never hit
    assert _miss(spec, np.array([], dtype=int)) == pytest.approx(1.0, rel=1e-12)


def test_ranks_spanning_groups_are_reached_more_often_than_one_group_holders():
    """Round-robin ranks hold experts of every group; contiguous ranks of one: the same count, reached more
    often when spread (a limited router cannot skip all their groups)."""
    spread = rank_reach_probability(MoESpec.parse(f"{BASE},tokens=8,groups=8,topk_groups=4"), 32)
    packed = rank_reach_probability(MoESpec.parse(f"{BASE},tokens=8,groups=8,topk_groups=4,placement=contiguous"), 32)
    assert np.allclose(spread, spread[0]) and np.allclose(packed, packed[0])
    assert spread[0] > packed[0]
    # expected ranks per token still add up under both (sum of reaches; each expert's share is k / E)
    assert spread.sum() <= 8 and packed.sum() <= 8


@pytest.mark.parametrize("dedup", ["rank", "node"])
@pytest.mark.parametrize("placement", ["contiguous", "round-robin"])
def test_sampled_agrees_with_balanced(dedup, placement):
    ep = 64
    spec = f"{BASE},tokens={ep * 1024},dedup={dedup},groups=8,topk_groups=4,placement={placement}"
    b = moe_traffic(MoESpec.parse(spec + ",skew=balanced"), ep)
    u = moe_traffic(MoESpec.parse(spec + ",skew=uniform,seed=2"), ep)
    assert u.bytes_total == pytest.approx(b.bytes_total, rel=0.01)
    nd = np.arange(ep) // 8
    cross = lambda t: t.matrix[nd[:, None] != nd[None, :]].sum()
    assert cross(u) == pytest.approx(cross(b), rel=0.01)


def test_limited_routing_sends_fewer_copies_across_nodes():
    ep = 64
    spec = f"{BASE},tokens={ep * 512},skew=balanced,dedup=node,placement=contiguous"
    free = moe_traffic(MoESpec.parse(spec), ep)
    lim = moe_traffic(MoESpec.parse(spec + ",groups=8,topk_groups=4"), ep)
    nd = np.arange(ep) // 8
    cross = lambda t: t.matrix[nd[:, None] != nd[None, :]].sum()
    # at most 4 of the 8 nodes per token (one group per node), against about 5.3 without the limit
    assert cross(lim) < 0.75 * cross(free)


@pytest.mark.parametrize("extra, words", [
    ("groups=8,topk_groups=9", "topk_groups=9 must be in 0..groups=8"),
    ("groups=7", "groups=7 must divide experts=256"),
    ("groups=64,topk_groups=1", "top_k=8 exceeds the 4 experts of topk_groups=1 groups of 4"),
    ("groups=0", "groups=0 must be >= 1"),
])
def test_bad_group_specs(extra, words):
    with pytest.raises(BadInput, match=words.replace(".", r"\.")):
        MoESpec.parse(f"{BASE},tokens=8,{extra}")
