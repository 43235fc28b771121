"""Fuzz corpus: generated option values and input files never end in a traceback.

The rule every command keeps (issue 16): a run either succeeds or exits 1 or 2 with exactly one
``Error:`` line; no exception escapes and no "Traceback" is printed; an input that must be
refused (non-finite figures, bits for bytes, a duplicate edge, random bytes) never exits 0.
Bounded: a few dozen examples per property on small fabrics (jalapeno-rack, torus 2x2x2,
nvl72), the link-load bound for prices, so the module runs in well under a minute.
"""
import json
import math
import os
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings, strategies as st

from fabricsim.cli import main
from fabricsim.fabrics import build
from fabricsim.fabrics.userfile import export_fabric
from fabricsim.topo.builders import BUILDERS
from fabricsim.topo.errors import BadInput

# FABRICSIM_FUZZ_EXAMPLES=500 runs a longer, randomized campaign; the default is small and fixed
_N = int(os.environ.get("FABRICSIM_FUZZ_EXAMPLES", "0"))
FUZZ = settings(max_examples=_N or 25, deadline=None, derandomize=not _N,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
FEW = settings(FUZZ, max_examples=max(10, _N // 5))

TMP = Path(tempfile.mkdtemp(prefix="fabricsim-fuzz-"))


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def clean(res, *, must_refuse: bool = False, budgets: bool = False):
    """The one-line rule; ``budgets``: audit's exit 1 with a FAILED budget report is a result, not an error."""
    out = res.output
    assert "Traceback" not in out, out[-2000:]
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert res.exit_code in (0, 1, 2), res.exit_code
    if must_refuse:
        assert res.exit_code != 0, out[-1000:]
    if res.exit_code != 0 and not (budgets and res.exit_code == 1 and "FAILED:" in out):
        errors = [line for line in out.splitlines() if line.startswith("Error:")]
        assert len(errors) == 1, out[-2000:]
        assert "\n" not in errors[0]


# --------------------------------------------------------------------------- value strategies
non_finite = st.sampled_from(["nan", "inf", "-inf", "1e400", "-1e400", "NaN", "Infinity"])
junk = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30)
numbers = st.one_of(st.integers(-10**30, 10**30).map(str),
                    st.floats(allow_nan=True, allow_infinity=True).map(repr), non_finite)
values = st.one_of(junk, numbers, st.just(""))


# --------------------------------------------------------------------------- CLI option values
PRICE = ["price", "all-reduce", "--fabric", "jalapeno-rack", "--bound-only"]


@FUZZ
@given(size=values)
def test_price_size(size):
    res = run(*PRICE, "--group-size", 8, "--size", size)
    bits = size.strip().endswith("b") and size.strip()[:1].isdigit()
    clean(res, must_refuse=bits or size.strip().lower() in {"nan", "inf", "-inf", "1e400"})


@FUZZ
@given(opt=st.sampled_from(["--efficiency", "--step-latency-us"]), value=values)
def test_price_calibration_options(opt, value):
    res = run(*PRICE, "--group-size", 8, "--size", "1MiB", opt, value)
    try:
        v = float(value)
    except ValueError:
        v = math.nan
    bad = not math.isfinite(v) or v < 0 or (opt == "--efficiency" and not 1e-6 <= v <= 1)
    clean(res, must_refuse=bad)


@FUZZ
@given(group_size=st.one_of(st.integers(-5, 300), st.integers(10**18, 10**30)).map(str) | junk,
       placement=st.one_of(st.sampled_from(["packed", "spread", "random", "random:", "packed:", "random:-1"]),
                           st.integers(-10**20, 10**20).map(lambda s: f"random:{s}"), junk),
       count=st.one_of(st.none(), st.integers(-3, 70).map(str)))
def test_price_groups(group_size, placement, count):
    args = [*PRICE, "--size", "1MiB", "--group-size", group_size, "--placement", placement]
    if count is not None:
        args += ["--count", count]
    res = run(*args)
    must = placement in ("random:", "packed:", "random:-1") or group_size in ("0", "1", "-1")
    clean(res, must_refuse=must)


mesh_entry = st.tuples(st.sampled_from(["tp", "ep", "dp", "pp", "cp", "x", "TP", ""]),
                       st.one_of(st.integers(-2, 300), st.integers(2**62, 2**80)).map(str) | junk)


@FUZZ
@given(mesh=st.lists(mesh_entry, max_size=4).map(lambda es: ",".join(f"{k}={v}" for k, v in es)) | junk,
       over=st.one_of(st.none(), st.sampled_from(["tp", "ep", "dp", "zz", ""])))
def test_price_mesh(mesh, over):
    args = [*PRICE, "--size", "1MiB", "--mesh", mesh]
    if over is not None:
        args += ["--over", over]
    clean(run(*args), must_refuse=mesh.strip() == "" or over is None)


@FEW
@given(plot=st.one_of(junk, st.sampled_from(["", "x.txt", "noext", ".", "a/b.png", "/proc/x.svg"])))
def test_plot_names(plot):
    picture = plot.lower().endswith((".png", ".svg", ".pdf"))
    # picture names land in the scratch directory (an absolute one like /proc/x.svg stays as given)
    res = run(*PRICE, "--group-size", 8, "--size", "1KiB", "--plot", TMP / plot if picture else plot)
    clean(res, must_refuse=not picture)


# --------------------------------------------------------------------------- --set over small fabrics
small_ints = st.integers(-3, 4).map(str)
absurd_ints = st.integers(10**7, 10**40).map(str)
dims = st.lists(st.one_of(st.integers(-2, 3), st.integers(10**6, 10**25)), min_size=0, max_size=5).map(
    lambda ks: "x".join(map(str, ks)))

SET_VALUES = {
    "jalapeno-rack": {"trays": small_ints | absurd_ints | junk, "chips_per_tray": small_ints | absurd_ints,
                      "local_switch": st.sampled_from(["BCM78914", "BCM78910", "x", ""])},
    "torus": {"dims": dims | junk, "link_GBps": numbers | junk},
    "boardfly": {"groups": st.integers(-2, 3).map(str) | absurd_ints, "link_GBps": numbers,
                 "port_placement": st.sampled_from(["spread", "naive", "?"])},
    "jalapeno-pod": {"racks": st.integers(-1, 1).map(str) | absurd_ints, "trays": st.just("2"),
                     "chips_per_tray": st.sampled_from(["8", "7", "0"])},
}


@st.composite
def fabric_sets(draw):
    fabric = draw(st.sampled_from(sorted(SET_VALUES)))
    specs = SET_VALUES[fabric]
    keys = draw(st.lists(st.sampled_from(sorted(specs) + ["nosuchkey"]), max_size=3, unique=True))
    sets = []
    if fabric == "torus" and "dims" not in keys:
        sets.append("dims=2x2x2")     # keep the valid cases small
    for k in keys:
        sets.append(f"{k}=" + (draw(specs[k]) if k in specs else draw(values)))
    return fabric, sets


def _must_refuse(sets) -> bool:
    for s in sets:
        k, _, v = s.partition("=")
        if k == "link_GBps" and v.strip().lower() in {"nan", "inf", "-inf", "1e400", "-1e400", "infinity"}:
            return True
    return False


@FUZZ
@given(case=fabric_sets())
def test_audit_set(case):
    fabric, sets = case
    res = run("audit", fabric, *[x for s in sets for x in ("--set", s)], "--no-hops", "--no-bisection")
    clean(res, must_refuse=_must_refuse(sets), budgets=True)


@FEW
@given(case=fabric_sets(), ext=st.sampled_from([".json", ".graphml", ".yml", ".csv", ""]))
def test_export_set(case, ext):
    fabric, sets = case
    res = run("export", fabric, *[x for s in sets for x in ("--set", s)], "-o", TMP / f"e{ext}")
    clean(res, must_refuse=_must_refuse(sets) or ext in (".csv", ""))


@FEW
@given(case=fabric_sets(), expand=st.one_of(st.none(), junk, st.sampled_from(["", "0", "1,2", "all", ",", "-1"])))
def test_draw_set(case, expand):
    fabric, sets = case
    args = ["draw", fabric, *[x for s in sets for x in ("--set", s)], "-o", TMP / "d.png", "--dpi", "40"]
    if expand is not None:
        args += ["--expand", expand]
    clean(run(*args), must_refuse=_must_refuse(sets))


@settings(FUZZ, max_examples=max(4, _N // 10))
@given(resume=st.one_of(st.just(""), junk.map(lambda s: str(TMP / "missing-dir" / (s or "x")))),
       data=st.binary(max_size=200))
def test_sweep_resume(resume, data):
    sweep = ["sweep", "all-reduce", "--fabric", "jalapeno-rack", "--class", "local-switch", "--size", "1MiB",
             "--group-size", "8", "--bound-only", "--samples", "1"]
    clean(run(*sweep, "--resume", resume), must_refuse=True)     # empty, or under a missing directory
    f = TMP / "resume.jsonl"
    f.write_bytes(data)
    clean(run(*sweep, "--resume", f))


# --------------------------------------------------------------------------- fabric files
BASE = json.loads(export_fabric(build("torus", dims=(2, 2, 2)), TMP / "base.json").read_text())
json_values = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30), st.text(max_size=8),
                        st.floats(allow_nan=True, allow_infinity=True), st.lists(st.integers(), max_size=2),
                        st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@st.composite
def mutated_fabric(draw):
    """(node-link JSON text, whether it must be refused)."""
    data = json.loads(json.dumps(BASE))
    kind = draw(st.sampled_from(["edge-attr", "node-attr", "graph", "dup-edge", "drop", "non-finite"]))
    must = False
    if kind == "edge-attr":
        e = draw(st.sampled_from(data["edges"]))
        e[draw(st.sampled_from(["lanes", "lane_gbps", "port_gbps", "capacity_gbps", "latency_ns", "medium",
                                "tier", "source", "target"]))] = draw(json_values)
    elif kind == "node-attr":
        n = draw(st.sampled_from(data["nodes"]))
        n[draw(st.sampled_from(["kind", "model", "rank", "forwards", "id", "x", "rack"]))] = draw(json_values)
    elif kind == "graph":
        data["graph"] = draw(json_values)
        must = not isinstance(data["graph"], dict)
    elif kind == "dup-edge":
        data["edges"].append(dict(draw(st.sampled_from(data["edges"]))))
        must = True
    elif kind == "drop":
        data.pop(draw(st.sampled_from(["nodes", "edges", "graph"])))
        must = "graph" in data
    else:
        e = draw(st.sampled_from(data["edges"]))
        e[draw(st.sampled_from(["capacity_gbps", "latency_ns", "lane_gbps", "port_gbps"]))] = draw(
            st.sampled_from([math.nan, math.inf, -math.inf]))
        must = True
    return json.dumps(data), must


@FUZZ
@given(case=mutated_fabric(), cmd=st.sampled_from(["audit", "price"]))
def test_mutated_json_fabric(case, cmd):
    text, must = case
    p = TMP / "m.json"
    p.write_text(text)
    if cmd == "audit":
        res = run("audit", p, "--no-hops", "--no-bisection")
    else:
        res = run("price", "all-reduce", "--fabric", p, "--size", "1MiB", "--bound-only")
    clean(res, must_refuse=must, budgets=True)


@FUZZ
@given(data=st.binary(max_size=300) | st.text(max_size=300).map(str.encode),
       ext=st.sampled_from([".json", ".toml", ".graphml"]))
def test_random_files_are_refused(data, ext):
    p = TMP / f"r{ext}"
    p.write_bytes(data)
    clean(run("audit", p), must_refuse=True)    # nothing this short is a valid fabric


@FEW
@given(depth=st.integers(1000, 200_000), ext=st.sampled_from([".json", ".toml"]))
def test_deep_nesting(depth, ext):
    p = TMP / f"deep{ext}"
    p.write_text(("[" * depth) if ext == ".json" else "builder = 'torus'\n[params]\ndims = " + "[" * depth)
    clean(run("audit", p), must_refuse=True)


recipe_params = st.dictionaries(
    st.sampled_from(["dims", "chips", "planes", "p", "a", "h", "g", "leaves", "chips_per_leaf", "spines",
                     "lane_gbps", "latency_ns", "lanes_per_link", "oversubscription", "groups", "bogus"]),
    st.one_of(st.integers(-2, 4), st.integers(10**7, 10**20), st.floats(allow_nan=True, allow_infinity=True),
              st.lists(st.integers(-1, 3), max_size=4), st.text(max_size=5), st.booleans()),
    max_size=4)


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(map(str, v)) + "]"
    return str(v)


@FUZZ
@given(builder=st.sampled_from(sorted(BUILDERS)) | st.sampled_from(['["torus"]', "{ name = 'torus' }", "3", '""']),
       params=recipe_params)
def test_toml_recipes(builder, params):
    head = f'builder = "{builder}"' if builder in BUILDERS else f"builder = {builder}"
    body = "\n".join(f"{k} = {_toml_value(v)}" for k, v in params.items())
    p = TMP / "recipe.toml"
    p.write_text(f"{head}\n[params]\n{body}\n")
    non_finite_given = any(isinstance(v, float) and not math.isfinite(v) for v in params.values())
    clean(run("audit", p, "--no-hops", "--no-bisection"),
          must_refuse=builder not in BUILDERS or non_finite_given, budgets=True)


@FUZZ
@given(data=st.one_of(st.binary(max_size=100), st.text(max_size=100).map(str.encode),
                      st.recursive(st.integers(-3, 200) | st.text(max_size=6),
                                   lambda c: st.lists(c, max_size=4), max_leaves=12).map(
                                       lambda x: json.dumps(x).encode())))
def test_groups_files(data):
    p = TMP / "groups.json"
    p.write_bytes(data)
    clean(run(*PRICE, "--size", "1MiB", "--groups", p))


# --------------------------------------------------------------------------- other branches' file readers
def _library_refuses(load, data: bytes, suffix: str, *args):
    p = TMP / f"lib{suffix}"
    p.write_bytes(data)
    try:
        load(p, *args)
    except BadInput as exc:
        assert "\n" not in str(exc)


@FUZZ
@given(data=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_calibration_files(data):
    cal = pytest.importorskip("fabricsim.collectives.cost.calibration")
    _library_refuses(cal.load_calibration, data, ".toml")


@FUZZ
@given(data=st.binary(max_size=200) | st.text(max_size=200).map(str.encode),
       suffix=st.sampled_from([".json", ".csv", ".npy", ".txt"]))
def test_traffic_files(data, suffix):
    traffic = pytest.importorskip("fabricsim.collectives.traffic")
    _library_refuses(traffic.load_matrix, data, suffix, 8, 1)


@FUZZ
@given(data=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_model_files(data):
    models = pytest.importorskip("fabricsim.collectives.jobs.models")
    _library_refuses(models.load_model, data, ".toml")
