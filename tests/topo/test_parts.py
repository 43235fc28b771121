"""The parts catalog and the bill of materials the audit reports (topo/parts.py)."""
import json

import pytest
from click.testing import CliRunner

from fabricsim.cli import main
from fabricsim.fabrics import build
from fabricsim.topo.auditing import audit
from fabricsim.topo.errors import BadInput
from fabricsim.topo.parts import KINDS, LABELS, bill_of_materials, count_parts, load_parts

RACK_CHIPS, RACK_SWITCHES = 128, 6      # jalapeno-rack: 128 chips, 6 local Tomahawk 6 (FACTS §1)


def run(*args):
    return CliRunner().invoke(main, list(args))


def _catalog_figure(kind, part, key):
    return getattr(load_parts()[kind, part], key)


def test_every_catalog_part_has_a_source_and_a_label():
    parts = load_parts()
    assert parts
    for (kind, name), p in parts.items():
        assert kind in KINDS and p.label in LABELS and p.source.strip(), (kind, name)
        assert p.price_usd is not None or p.watts is not None, (kind, name)


def test_jalapeno_rack_totals_equal_a_hand_count():
    # hand count: every chip has one 4-lane 800G copper port to each of the 6 local switches, so
    # 128 x 6 = 768 copper-800g cables; 6 switch ASICs; 128 chips (priced here by the override)
    chip_usd, chip_w = 20_000.0, 900.0
    over = {"chip": {"jalapeno": {"price_usd": chip_usd, "watts": chip_w, "source": "test", "label": "I"}}}
    a = audit(build("jalapeno-rack"), hops=False, bisect=False, parts=over)
    sw_usd, sw_w = _catalog_figure("switch", "BCM78914", "price_usd"), _catalog_figure("switch", "BCM78914", "watts")
    cu_usd, cu_w = (_catalog_figure("copper", "copper-800g", "price_usd"),
                    _catalog_figure("copper", "copper-800g", "watts"))
    cables = RACK_CHIPS * RACK_SWITCHES
    assert {(b.kind, b.part): b.count for b in a.bom} == {
        ("chip", "jalapeno"): RACK_CHIPS, ("switch", "BCM78914"): RACK_SWITCHES, ("copper", "copper-800g"): cables}
    assert a.capex_usd == pytest.approx(RACK_CHIPS * chip_usd + RACK_SWITCHES * sw_usd + cables * cu_usd)
    assert a.power_kw == pytest.approx((RACK_CHIPS * chip_w + RACK_SWITCHES * sw_w + cables * cu_w) / 1000)
    assert a.unpriced == ()


def test_optics_and_ocs_ports_are_counted_per_end_per_port():
    # jalapeno-pod racks=2: each rack's 4 leaves send 2 x 1.6T to each of the 16 switches of their
    # 2 rails: 4 x 16 x 2 = 128 optical ports per rack, a module at each end: 256 modules per rack;
    # every uplink passes the rack's OCS: 2 OCS ports per port
    c = count_parts(build("jalapeno-pod", racks=2))
    assert c["optic", "optic-1600g"] == 2 * 256
    assert c["ocs", "ocs-port"] == 2 * 256
    assert c["switch", "BCM78914"] == 2 * (6 + 4) + 64


def test_a_gpu_nic_composite_counts_its_nic():
    # hgx-h100: 8 h100-sxm+cx7 chips -> 8 GPUs and 8 NICs; 8 x 400G optical rail links -> 16 modules
    bom = bill_of_materials(build("hgx-h100"))
    got = {(b.kind, b.part): b.count for b in bom.lines}
    assert got[("chip", "h100-sxm")] == 8 and got[("nic", "cx7")] == 8
    assert got[("optic", "optic-400g")] == 16
    parts = load_parts()
    want = sum(n * parts[k].price_usd for k, n in got.items() if parts.get(k) and parts[k].price_usd is not None)
    assert bom.capex_usd == pytest.approx(want)


def test_an_empty_override_keeps_the_catalog_and_a_loaded_catalog_is_used_as_is():
    G = build("jalapeno-rack")
    base = bill_of_materials(G)
    assert base.capex_usd > 0
    assert bill_of_materials(G, {}).capex_usd == base.capex_usd
    assert bill_of_materials(G, load_parts()).capex_usd == base.capex_usd


def test_an_asics_group_counts_every_asic():
    G = build("jalapeno-rack")
    G.nodes["r00/lsw0"]["asics"] = 3
    assert count_parts(G)["switch", "BCM78914"] == RACK_SWITCHES + 2


@pytest.mark.parametrize("kind,part,count", [("switch", "BCM78914", RACK_SWITCHES),
                                             ("copper", "copper-800g", RACK_CHIPS * RACK_SWITCHES)])
def test_changing_a_part_price_changes_capex_by_count_times_delta(kind, part, count):
    G = build("jalapeno-rack")
    base = audit(G, hops=False, bisect=False)
    p = load_parts()[kind, part]
    delta = 1234.5
    over = {kind: {part: {"price_usd": p.price_usd + delta, "watts": p.watts, "source": "test", "label": "I"}}}
    moved = audit(G, hops=False, bisect=False, parts=over)
    assert moved.capex_usd - base.capex_usd == pytest.approx(count * delta)
    assert moved.power_kw == base.power_kw


def test_unpriced_parts_are_listed_not_counted_as_zero():
    a = audit(build("jalapeno-rack"), hops=False, bisect=False)
    assert a.unpriced == ("chip:jalapeno (missing price_usd, watts)",)
    line = next(b for b in a.bom if b.part == "jalapeno")
    assert line.count == RACK_CHIPS and line.price_usd is None and line.watts is None
    # a part with only one figure is listed for the other
    over = {"switch": {"BCM78914": {"watts": 800.0, "source": "test", "label": "I"}}}
    b = audit(build("jalapeno-rack"), hops=False, bisect=False, parts=over)
    assert "switch:BCM78914 (missing price_usd)" in b.unpriced
    assert b.capex_usd == pytest.approx(a.capex_usd - RACK_SWITCHES * _catalog_figure("switch", "BCM78914",
                                                                                       "price_usd"))


def test_audit_json_carries_the_bom_and_totals():
    res = run("audit", "jalapeno-rack", "--no-hops", "--no-bisection", "--json")
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)
    for key in ("bom", "capex_usd", "power_kw", "unpriced"):
        assert key in got
    assert {tuple(sorted(line)) for line in got["bom"]} == {
        tuple(sorted(("part", "kind", "count", "price_usd", "watts", "source", "label")))}
    assert got["capex_usd"] == sum(b["count"] * b["price_usd"] for b in got["bom"] if b["price_usd"] is not None)
    assert got["unpriced"] == ["chip:jalapeno (missing price_usd, watts)"]


def test_parts_file_overrides_on_the_command_line(tmp_path):
    f = tmp_path / "parts.toml"
    f.write_text('[switch."BCM78914"]\nprice_usd = 1000\nwatts = 100\nsource = "test"\nlabel = "I"\n')
    base = json.loads(run("audit", "jalapeno-rack", "--no-hops", "--no-bisection", "--json").output)
    got = json.loads(run("audit", "jalapeno-rack", "--no-hops", "--no-bisection", "--json", "--parts", str(f)).output)
    sw = _catalog_figure("switch", "BCM78914", "price_usd")
    assert got["capex_usd"] - base["capex_usd"] == pytest.approx(RACK_SWITCHES * (1000 - sw))
    text = run("audit", "jalapeno-rack", "--no-hops", "--no-bisection", "--parts", str(f)).output
    assert "Bill of materials" in text and f"capex {got['capex_usd']:,.0f} USD" in text


@pytest.mark.parametrize("body,words", [
    ("x = [", "not valid TOML"),
    ('[gadget."a"]\nprice_usd = 1\nsource = "s"\nlabel = "I"\n', "part kind 'gadget'"),
    ('[chip."a"]\nprice_usd = -1\nsource = "s"\nlabel = "I"\n', "price_usd=-1"),
    ('[chip."a"]\nprice_usd = 1\nsource = "s"\nlabel = "X"\n', "label='X'"),
    ('[chip."a"]\nprice_usd = 1\nlabel = "I"\n', "source"),
    ('[chip."a"]\nprice = 1\nsource = "s"\nlabel = "I"\n', "unknown key(s) price"),
])
def test_a_bad_parts_file_is_one_line(tmp_path, body, words):
    f = tmp_path / "bad.toml"
    f.write_text(body)
    with pytest.raises(BadInput, match=None) as exc:
        load_parts(f)
    assert words in str(exc.value) and "\n" not in str(exc.value)
    res = run("audit", "jalapeno-rack", "--parts", str(f))
    assert res.exit_code != 0
    err = res.output.strip()
    assert len(err.splitlines()) == 1 and words in err


def test_a_missing_parts_file_is_one_line(tmp_path):
    res = run("audit", "jalapeno-rack", "--parts", str(tmp_path / "nope.toml"))
    assert res.exit_code != 0 and len(res.output.strip().splitlines()) == 1 and "nope.toml" in res.output
