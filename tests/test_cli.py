import json

import click
import pytest
from click.testing import CliRunner

from fabricsim.cli import main
from fabricsim.fabrics import FABRICS, build
from fabricsim.topo.audit import audit


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_every_command_has_help_text():
    for name, cmd in main.commands.items():
        assert cmd.help and len(cmd.help.strip()) > 20, name
        res = run(name, "--help")
        assert res.exit_code == 0 and "Usage" in res.output


def test_audit_json_equals_the_library_result():
    res = run("audit", "jalapeno-pod", "--set", "racks=2", "--json")
    assert res.exit_code == 0
    got = json.loads(res.output)
    want = json.loads(json.dumps(audit(build("jalapeno-pod", racks=2)).as_dict()))
    assert got == want
    for key in ("fabric", "params", "chips", "switches", "diameter_hops", "mean_hops", "bisection_GBps",
                "totals", "findings", "ok"):
        assert key in got
    assert set(got["findings"][0]) >= {"where", "check", "used", "available", "unit", "ok"}
    assert got["params"]["racks"] == 2


def test_failed_budget_exits_1_and_shows_findings():
    res = run("audit", "jalapeno-rack", "--set", "local_switch=BCM78910")
    assert res.exit_code == 1
    assert "FAILED" in res.output and "lane rate" in res.output


@pytest.mark.parametrize("args, words", [
    (["audit", "jalapeno-rak"], ["did you mean jalapeno-rack", "choose one of"]),
    (["audit", "jalapeno-pod", "--set", "rack=3"], ["no parameter 'rack'", "valid keys: racks"]),
    (["audit", "jalapeno-pod", "--set", "racks=x"], ["racks='x'", "int"]),
    (["audit", "jalapeno-pod", "--set", "racks=0"], ["racks=0", "at least 1"]),
    (["audit", "jalapeno-pod", "--set", "leaf=foo"], ["leaf='foo'", "switched, static"]),
    (["audit", "jalapeno-pod", "--set", "racks"], ["key=value"]),
])
def test_bad_input_is_one_line_exit_2(args, words):
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2
    assert "Traceback" not in res.output
    err = [ln for ln in res.output.splitlines() if ln.startswith("Error:")]
    assert len(err) == 1
    for w in words:
        assert w in err[0]


def test_list_shows_every_catalog_fabric():
    res = run("list", "--json")
    rows = json.loads(res.output)
    assert {r["name"] for r in rows} == set(FABRICS)
    rack = next(r for r in rows if r["name"] == "jalapeno-rack")
    assert rack["chips"] == 128 and rack["switches"] == 6


def test_params_lists_choices():
    res = run("params", "jalapeno-pod")
    assert "rail_wiring" in res.output and "per-lane" in res.output


def test_only_cli_imports_click():
    import pathlib
    root = pathlib.Path(__file__).resolve().parents[1]
    for sub in ("topo", "collectives", "fabrics"):
        for py in (root / sub).glob("*.py"):
            assert "import click" not in py.read_text(), py
