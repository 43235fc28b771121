"""The rough edges a new user hits (issue 26, item 6): each test fails without its fix."""
import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from fabricsim.cli import main


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], prog_name="fabricsim")


# --------------------------------------------------------------------------- 1. one-line value errors
def test_bad_value_prints_error_and_hint_without_usage_block():
    res = run("price", "all-reduce", "--fabric", "nvl72", "--size", "1GiB", "--efficiency", "2")
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    # the hint, then the error last (as click prints its own errors; scripts read the last line)
    assert lines == ["Try 'fabricsim price --help' for help.",
                     "Error: Invalid value for '--efficiency': '2' is not a finite number in [1e-06, 1]"], res.output
    assert "Usage:" not in res.output


def test_bad_value_raised_by_a_command_is_one_line_too():
    res = run("price", "all-reduce", "--fabric", "nvl72", "--size", "1GiB", "--group-size", "64")
    assert res.exit_code == 2 and "Usage:" not in res.output, res.output
    assert res.output.strip().splitlines()[-1].startswith("Error: Invalid value for --group-size:"), res.output
    assert len(res.output.strip().splitlines()) == 2


def test_wrong_usage_keeps_the_usage_block():
    for args in (("price", "all-reduce", "--fabric", "nvl72"),                       # missing option
                 ("price", "all-reduce", "--fabric", "nvl72", "--size", "1GiB", "--bogus")):   # unknown option
        res = run(*args)
        assert res.exit_code == 2 and "Usage: fabricsim price" in res.output, res.output


# --------------------------------------------------------------------------- 2. a closed pipe ends quietly
def _closed_stdout(*args):
    """Run the CLI with its stdout's reader already gone (as `| head -1` after the first line)."""
    p = subprocess.Popen([sys.executable, "-m", "fabricsim.cli", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    p.stdout.close()   # before the interpreter has started: every write hits a closed pipe
    err = p.stderr.read().decode()
    return p.wait(timeout=60), err


def test_closed_pipe_ends_quietly_for_a_command():
    rc, err = _closed_stdout("params", "nvl72")
    assert rc in (0, 141) and err == "", (rc, err)


def test_closed_pipe_ends_quietly_for_help():
    rc, err = _closed_stdout("--help")
    assert rc in (0, 141) and err == "", (rc, err)


# --------------------------------------------------------------------------- 3. the divisibility hint
def test_group_size_that_does_not_divide_suggests_count_1():
    res = run("price", "all-reduce", "--fabric", "nvl72", "--group-size", "64", "--size", "1GiB")
    assert res.exit_code == 2 and "64 does not divide the 72 chips" in res.output, res.output
    assert "--count 1" in res.output and "one group of 64" in res.output, res.output
    # and the suggestion works
    res = run("price", "all-reduce", "--fabric", "nvl72", "--group-size", "64", "--size", "1GiB", "--count", "1")
    assert res.exit_code == 0 and "1 group(s) of 64" in res.output, res.output


# --------------------------------------------------------------------------- 4. compare --set and chips
def test_compare_set_applies_to_the_named_fabric_and_shows_chips():
    base = ["compare", "all-reduce", "--fabrics", "nvl72,torus", "--group-size", "8", "--size", "64MiB"]
    res = run(*base, "--set", "torus:dims=4x4x2")
    assert res.exit_code == 0, res.output
    table = [line.split() for line in res.output.splitlines() if line.startswith(("nvl72", "torus"))]
    assert table[0][:2] == ["nvl72", "72"] and table[1][:2] == ["torus(dims=4x4x2)", "32"], res.output
    header = res.stdout.splitlines()[0].split()
    assert header[:2] == ["fabric", "chips"]
    rows = json.loads(run(*base, "--set", "torus:dims=4x4x2", "--json").stdout)
    assert [r["chips"] for r in rows] == [72, 32] and rows[1]["set"] == {"dims": "4x4x2"} and rows[0]["set"] == {}
    default = json.loads(run(*base, "--json").stdout)   # the override changes the fabric and so the answer
    assert default[1]["chips"] != 32 and default[1]["time_s"] != rows[1]["time_s"]
    assert default[0] == rows[0]                         # and leaves the other fabric alone


def test_compare_set_errors_name_the_choices():
    base = ["compare", "all-reduce", "--fabrics", "nvl72,torus", "--group-size", "8", "--size", "64MiB"]
    res = run(*base, "--set", "dims=4x4")
    assert res.exit_code == 2 and "is not FABRIC:KEY=VALUE" in res.output, res.output
    res = run(*base, "--set", "tor:dims=4x4")
    assert res.exit_code == 2 and "choose one of: nvl72, torus" in res.output, res.output
    res = run(*base, "--set", "torus:dimz=4x4")
    assert res.exit_code == 2 and "Invalid value for --set" in res.output and "dims" in res.output, res.output


# --------------------------------------------------------------------------- 5. fabric TOML strings as --set
def test_toml_string_values_are_read_like_set(tmp_path):
    from fabricsim.fabrics.userfile import load_fabric
    p = tmp_path / "t.toml"
    p.write_text('builder = "torus"\n[params]\ndims = "4x4x2"\nlanes_per_link = "2"\n')
    G = load_fabric(p)
    assert G.graph["dims"] == "4x4x2" and G.number_of_nodes() == 32
    assert G.edges["c00.00.00", "c01.00.00"]["lanes"] == 2
    # the same file with an array and an integer builds the same graph
    q = tmp_path / "u.toml"
    q.write_text('builder = "torus"\n[params]\ndims = [4, 4, 2]\nlanes_per_link = 2\n')
    assert sorted(load_fabric(q).edges) == sorted(G.edges)


def test_toml_bad_string_value_names_the_file_and_what_is_expected(tmp_path):
    from fabricsim.fabrics.userfile import load_fabric
    from fabricsim.topo.errors import BadInput
    p = tmp_path / "t.toml"
    p.write_text('builder = "torus"\n[params]\ndims = "4xfour"\n')
    with pytest.raises(BadInput, match=r"t\.toml: dims='4xfour' is not valid: expected integers joined by x"):
        load_fabric(p)


def test_torus_refuses_a_string_dims_in_the_library():
    from fabricsim.topo.builders import torus
    from fabricsim.topo.errors import BadInput
    with pytest.raises(BadInput, match="is a string"):
        torus("4x4")


def test_set_converter_reads_optional_ints():
    from fabricsim.fabrics.registry import convert_value
    assert convert_value("g", "4", int | None) == 4
    assert convert_value("dims", "8x8x8", tuple[int, ...]) == (8, 8, 8)


# --------------------------------------------------------------------------- 6. audit: failures first, stable count
def test_audit_check_count_does_not_depend_on_failures_or_options():
    from fabricsim.fabrics import build
    from fabricsim.topo.auditing import audit
    ok = audit(build("jalapeno-rack"), bisect=False)
    bad = audit(build("jalapeno-rack", local_switch="BCM78910"), hops=False, bisect=False)
    assert ok.ok and not bad.ok
    assert len(ok.findings) == len(bad.findings)            # was 536 passing vs 1,304 with 768 failing
    assert [(f.where, f.check) for f in ok.findings] == [(f.where, f.check) for f in bad.findings]


def test_failing_audit_prints_failures_first():
    res = run("audit", "jalapeno-rack", "--set", "local_switch=BCM78910", "--no-bisection")
    assert res.exit_code == 1
    lines = res.stdout.splitlines()
    assert lines[0].startswith("FAILED: 6 of 670 budget checks (per chip and switch:"), lines[0]
    assert lines[1].startswith("  lane rate: 6 x, e.g. r00/lsw0: 200 of 100 Gb/s per lane"), lines[1]
    assert lines[3].startswith("jalapeno-rack ")           # then the headline and the tables
    ok = run("audit", "jalapeno-rack", "--no-bisection").stdout.splitlines()
    assert ok[-1].startswith("OK: all 670 budget checks pass")


# --------------------------------------------------------------------------- 7. step says what it leaves out
STEP = ["step", "--model", "deepseek-r1", "--fabric", "nvl72", "--mesh", "ep=64", "--batch", "64"]


def test_step_text_says_compute_hbm_and_kv_cache_are_not_modelled():
    res = run(*STEP)
    assert res.exit_code == 0, res.output
    assert "compute, HBM traffic and the KV cache are not modelled" in res.stdout


def test_step_with_compute_says_it_is_a_flat_figure():
    res = run(*STEP, "--compute-us", "40")
    assert res.exit_code == 0, res.output
    assert "compute is a flat 40 us per layer" in res.stdout and "KV cache are not modelled" in res.stdout
    assert "compute, HBM traffic" not in res.stdout


# --------------------------------------------------------------------------- 8. --help and list stay light
def _modules_after(*args):
    code = ("import sys\nfrom fabricsim.cli import main\n"
            f"try:\n    main({list(args)!r}, prog_name='fabricsim')\nexcept SystemExit:\n    pass\n"
            "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'scipy') "
            "or m.startswith('fabricsim.collectives'))), file=sys.stderr)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    return p.stderr.strip().split()


def test_help_does_not_import_the_pricing_stack():
    assert _modules_after("--help") == []            # numpy, scipy, collectives: only when a command needs them
    assert "fabricsim.collectives" not in _modules_after("params", "nvl72")


def test_list_rows_are_read_from_the_cache_once_counted(tmp_path, monkeypatch):
    from fabricsim.fabrics import build
    from fabricsim.fabrics import catalog_cache as CC
    names = ["nvl72", "mi355x", "hgx-h100"]
    cold = CC.catalog_rows(names, cache_dir=tmp_path)
    for row in cold:   # the counts are the built graph's
        G = build(row["name"])
        assert row["chips"] == sum(1 for _, d in G.nodes(data=True) if d["kind"] == "chip")
    assert [r["name"] for r in cold] == names and cold[0]["chips"] == 72

    def no_build(name):
        raise AssertionError(f"built {name} although its counts are cached")
    monkeypatch.setattr(CC, "_counts", no_build)
    assert CC.catalog_rows(names, cache_dir=tmp_path) == cold


def test_list_cache_is_rebuilt_when_stale_or_corrupt(tmp_path, monkeypatch):
    from fabricsim.fabrics import catalog_cache as CC
    built = []
    real = CC._counts
    monkeypatch.setattr(CC, "_counts", lambda name: built.append(name) or real(name))
    CC.catalog_rows(["nvl72"], cache_dir=tmp_path)
    CC.cache_path(tmp_path).write_text("{not json")                     # corrupt: counted again
    CC.catalog_rows(["nvl72"], cache_dir=tmp_path)
    monkeypatch.setattr(CC, "_source_key", lambda: "edited-sources")     # a source edit: a new key
    CC.catalog_rows(["nvl72"], cache_dir=tmp_path)
    assert built == ["nvl72"] * 3
    assert [p.name for p in tmp_path.glob("catalog-*.json")] == [CC.cache_path(tmp_path).name]   # old one gone


@pytest.mark.slow
def test_list_json_is_the_same_from_builds_and_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FABRICSIM_CACHE_DIR", str(tmp_path))
    cold, warm = run("list", "--json"), run("list", "--json")
    assert cold.exit_code == warm.exit_code == 0
    assert json.loads(cold.stdout) == json.loads(warm.stdout)
    assert cold.stderr == warm.stderr == ""
