"""What a notebook user sees: short reprs, HTML views, summaries, typed fields (issue 26's notebook findings)."""
from __future__ import annotations

import pytest

from fabricsim.collectives import by_size, price
from fabricsim.collectives.jobs.mix import Job, mix
from fabricsim.fabrics import build
from fabricsim.topo.auditing import audit


@pytest.fixture(scope="module")
def rack():
    return build("jalapeno-rack")


def test_audit_repr_is_one_line_not_megabytes(rack):
    a = audit(rack)
    text = repr(a)
    assert text.startswith("Audit(jalapeno-rack: 128 chips, 6 switches") and "\n" not in text and len(text) < 200
    assert f"{len(a.findings):,} budget checks ok" in text
    assert a._repr_html_().startswith("<b>") and "chips" in a._repr_html_()
    failing = audit(build("jalapeno-rack", local_switch="BCM78910"))
    assert "FAILED" in repr(failing) and not failing.ok


def test_cost_report_repr_says_what_and_how_much(rack):
    r = price(rack, "all-reduce", groups=by_size(rack, 8), size_bytes=2 ** 26)
    text = repr(r)
    assert text.startswith("CostReport(all-reduce on jalapeno-rack: 16 group(s) of 8, 64 MiB, ")
    assert f"{r.busbw_GBps:,.1f} GB/s" in text and "\n" not in text
    html = r._repr_html_()
    assert all(p.name in html for p in r.phases)


def test_mix_result_repr_and_job_slowdown(rack):
    g = by_size(rack, 128)
    m = mix(rack, [Job("a", "all-to-all", g, 2 ** 24, algorithm="direct"),
                   Job("b", "all-to-all", [tuple(reversed(x)) for x in g], 2 ** 24, algorithm="direct")])
    assert repr(m).startswith("MixResult(2 job(s) on jalapeno-rack: makespan ")
    j = m.jobs[0]
    assert j.slowdown == pytest.approx(j.time_s / j.solo_s) and j.slowdown > 1     # shared links: slower together
    assert j.as_dict()["slowdown"] == j.slowdown


def test_price_signature_shows_the_real_defaults():
    """help(price) shows PriceOptions' defaults, not <object object at 0x...>; options= still wins when left out."""
    import inspect
    from fabricsim.collectives import PriceOptions
    sig = inspect.signature(price)
    assert "object at 0x" not in str(sig)
    assert repr(sig.parameters["algorithm"].default) == "'auto'" and repr(sig.parameters["symmetry"].default) == "True"
    G = build("jalapeno-rack")
    opts = PriceOptions(size_bytes=2 ** 26, algorithm="ring", protocol="ll")
    r = price(G, "all-reduce", groups=by_size(G, 8), options=opts)
    assert (r.algorithm, r.protocol) == ("ring", "ll")                # not overridden by the shown defaults
    r = price(G, "all-reduce", groups=by_size(G, 8), options=opts, protocol="simple")
    assert r.protocol == "simple"                                     # a keyword given still overrides
