"""serve --disaggregate on named chips: rank ranges and node-id globs put the pools where the user says.

Named pools in the default places price exactly as counts; moving the decode pool away from the prefill
pool on a ring lengthens only the KV transfer; a rack glob on the pod resolves to that rack's chips;
overlapping, empty or unknown names are one-line refusals."""
from __future__ import annotations

import pytest

from fabricsim.collectives.serve import serve
from fabricsim.collectives.serve.disagg import parse_disaggregate
from fabricsim.fabrics import build
from fabricsim.topo.errors import BadInput

from test_serve_disagg import CHIP, ISL, OSL, toy   # the one-layer toy and its chip (same folder)


def run(G, pools):
    return serve(G, toy(), mesh="tp=2", concurrency=2, isl=ISL, osl=OSL, accelerator=CHIP,
                 disaggregate=pools | {"protocol": "ideal", "prefill_mesh": "tp=2"}).points[0]


def test_named_pools_in_the_default_places_price_as_counts():
    G = build("torus", dims="8x1x1")
    by_count = run(G, {"prefill": 2, "decode": 2})
    by_name = run(G, {"prefill": "0-1", "decode": [2, 3]})
    named = by_name.disagg.as_dict()
    assert (named.pop("prefill_ranks"), named.pop("decode_ranks")) == ([0, 1], [2, 3])
    assert named == by_count.disagg.as_dict()
    assert (by_name.ttft_s, by_name.tpot_s, by_name.e2e_s) == (by_count.ttft_s, by_count.tpot_s, by_count.e2e_s)


def test_a_farther_decode_pool_slows_only_the_kv_transfer():
    G = build("torus", dims="8x1x1")      # 8 chips in a ring, 1 us per hop
    near = run(G, {"prefill": "0-1", "decode": "2-3"})    # prompts move 2 hops, one way round
    far = run(G, {"prefill": "0-1", "decode": "3-4"})     # 3 hops (4-5 would split over both ways round)
    hop_s = next(iter(G.edges(data=True)))[2]["latency_ns"] * 1e-9
    # the same bytes over one more link: exactly one more hop's latency (both share one link either way)
    assert far.disagg.kv_transfer_alone_s - near.disagg.kv_transfer_alone_s == pytest.approx(hop_s, rel=1e-9)
    assert far.ttft_s > near.ttft_s
    assert far.tpot_s == near.tpot_s and far.prefill.time_s == near.prefill.time_s
    assert far.disagg.as_dict()["decode_ranks"] == [3, 4] and far.disagg.as_dict()["prefill_ranks"] == [0, 1]


def test_globs_and_ranges_resolve_to_ranks():
    G = build("jalapeno-pod", racks=2)
    p = parse_disaggregate("prefill=r01/*,decode=0-31+64-95", 256, G)
    assert p.prefill_at == tuple(range(128, 256))
    assert p.decode_at == (*range(32), *range(64, 96)) and p.decode == 64
    # a pool given by count takes the first chips the named one leaves free
    q = parse_disaggregate("prefill=0-63,decode=32", 256, G)
    assert q.decode_at == tuple(range(64, 96))
    assert q.as_dict()["decode_ranks"] == list(range(64, 96))
    assert "prefill_ranks" not in parse_disaggregate("prefill=64,decode=64", 256, G).as_dict()


@pytest.mark.parametrize("spec,match", [
    ("prefill=0-63,decode=32-95", "share 32 chip"),
    ("prefill=r09/*,decode=0-63", "names no chip"),
    ("prefill=63-0,decode=64", "low first"),
    ("prefill=0-999,decode=64", "within 0 .. 255"),
    ("prefill=0-63,decode=250", "only 192 chips are left"),
])
def test_bad_named_pools_are_refused(spec, match):
    G = build("jalapeno-pod", racks=2)
    with pytest.raises(BadInput, match=match) as err:
        parse_disaggregate(spec, 256, G)
    assert err.value.param == "disaggregate"
