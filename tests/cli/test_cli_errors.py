"""User-facing errors of the CLI: checked before any work, naming the option the user typed."""
from click.testing import CliRunner

from fabricsim.cli import main


def run(*args):
    res = CliRunner().invoke(main, [str(a) for a in args])
    errors = [line for line in res.output.splitlines() if line.startswith("Error:")]
    return res, errors


def refused(*args, hint: str, match: str = ""):
    res, errors = run(*args)
    assert res.exit_code == 2, res.output
    assert len(errors) == 1, res.output
    assert errors[0].startswith(f"Error: Invalid value for {hint}:"), errors[0]
    assert match in errors[0], errors[0]
    return res


# --------------------------------------------------------------------------- compare checks before pricing
def test_compare_help_example_runs():
    res, _ = run("compare", "--help")
    examples = [line.split("fabricsim ", 1)[1].split() for line in res.output.splitlines()
                if "fabricsim compare" in line]
    assert examples
    for ex in examples:
        res, errors = run(*ex)
        assert res.exit_code == 0, (ex, res.output)


def test_compare_unknown_fabric_before_pricing():
    res = refused("compare", "all-reduce", "--fabrics", "jalapeno-rack,nvl27", "--size", "1MiB",
                  hint="--fabrics", match="nvl27")
    assert "pricing on" not in res.output


def test_compare_unknown_algorithm_before_pricing():
    res = refused("compare", "all-reduce", "--fabrics", "jalapeno-rack,nvl72", "--size", "1MiB",
                  "--algorithm", "rin", hint="--algorithm", match="did you mean ring")
    assert "pricing on" not in res.output


def test_compare_group_size_checked_on_every_fabric_first():
    res = refused("compare", "all-reduce", "--fabrics", "jalapeno-rack,nvl72", "--group-size", "64",
                  "--size", "1MiB", hint="--group-size", match="72 chips of 'nvl72'")
    assert "pricing on" not in res.output


# --------------------------------------------------------------------------- placement and pricing hints
PRICE = ("price", "all-reduce", "--fabric", "jalapeno-rack", "--size", "1MiB")


def test_group_size_error_names_group_size():
    refused(*PRICE, "--group-size", "7", hint="--group-size", match="does not divide")


def test_count_error_names_count():
    refused(*PRICE, "--group-size", "8", "--count", "100", hint="--count", match="at most 16")


def test_group_larger_than_fabric_says_so():
    refused(*PRICE, "--group-size", "129", "--count", "1", hint="--group-size",
            match="group size 129 is larger than the 128 chips of 'jalapeno-rack'")


def test_mesh_over_groups_placement_name_their_option(tmp_path):
    refused(*PRICE, "--mesh", "tp=7", "--over", "tp", hint="--mesh", match="covers 7 chips")
    refused(*PRICE, "--mesh", "tp=8,dp=16", "--over", "ep", hint="--over", match="not a mesh dimension")
    refused(*PRICE, "--groups", tmp_path / "none.json", hint="--groups", match="cannot read")
    refused(*PRICE, "--group-size", "8", "--placement", "packd", hint="--placement", match="unknown placement")


def test_algorithm_errors_name_algorithm():
    refused(*PRICE, "--algorithm", "rin", hint="--algorithm", match="did you mean ring")
    refused(*PRICE, "--algorithm", "nvls", hint="--algorithm", match="nvls needs")


# --------------------------------------------------------------------------- sizes
def test_size_must_be_whole_bytes():
    refused(*PRICE[:-2], "--size", "1.5B", hint="--size", match="whole number of bytes")


def test_size_unit_list_names_every_unit():
    msg = refused(*PRICE[:-2], "--size", "5XB", hint="--size").output
    assert "TiB" in msg and "TB" in msg


def test_negative_size_says_positive():
    refused(*PRICE[:-2], "--size", "-5MiB", hint="--size", match="must be positive")


# --------------------------------------------------------------------------- params, audit
def test_params_of_a_file_says_catalog_only():
    refused("params", "good.toml", hint="FABRIC", match="catalog name only")


def test_audit_of_a_directory_says_directory(tmp_path):
    d = tmp_path / "some_dir.toml"
    d.mkdir()
    refused("audit", d, hint="FABRIC", match="is a directory")


# --------------------------------------------------------------------------- sweep, step, whatif
SWEEP = ("sweep", "all-reduce", "--fabric", "jalapeno-rack", "--size", "1MiB")


def test_sweep_bad_class_names_class():
    refused(*SWEEP, "--class", "rial", hint="--class", match="did you mean")


def test_sweep_samples_over_the_scenarios_says_so():
    res = CliRunner().invoke(main, [*SWEEP, "--class", "local-switch", "--samples", "100", "--json"])
    assert res.exit_code == 0, res.output
    assert "--samples 100 >= the 6 scenarios: all of them run" in res.stderr


STEP = ("step", "--model", "deepseek-r1", "--fabric", "jalapeno-rack", "--mesh", "ep=128", "--batch", "1024")


def test_step_errors_name_their_option():
    refused(*STEP, "--skew", "zipf", hint="--skew", match="zipf:A")
    refused(*STEP, "--skew", "zipf:-1", hint="--skew", match="exponent")
    res, errors = run(*STEP, "--compute-us", "-1")
    assert res.exit_code == 2 and "'--compute-us'" in errors[0], res.output
    res, errors = run(*STEP, "--dispatch-dtype", "fp9")
    assert res.exit_code == 2 and "'--dispatch-dtype'" in errors[0], res.output


def test_step_mesh_too_large_for_one_of_the_fabrics_names_mesh_before_pricing():
    res = refused("step", "--model", "deepseek-r1", "--fabrics", "jalapeno-rack,nvl72", "--mesh", "ep=128",
                  "--batch", "1024", hint="--mesh", match="'nvl72' has 72")
    assert "priced" not in res.output


def test_choices_are_the_library_registries_not_retyped():
    """STYLE 9: a choice list is read from the library, so a registered dtype, split or format is offered."""
    from fabricsim.cli import main
    from fabricsim.collectives.engine import SPLIT_CHOICES
    from fabricsim.collectives.traffic.moe import DTYPE_BYTES
    from fabricsim.topo.export_text import EXPORT_FORMATS

    def choices(cmd, name):
        return tuple(next(p for p in main.commands[cmd].params if p.name == name).type.choices)
    assert choices("step", "dispatch_dtype") == tuple(DTYPE_BYTES)
    assert choices("price", "split") == SPLIT_CHOICES
    assert choices("mix", "split") == tuple(s for s in SPLIT_CHOICES if s != "adaptive")
    assert choices("export", "fmt") == tuple(EXPORT_FORMATS)


def test_whatif_fail_with_two_specs_in_one_value_says_repeat():
    refused("whatif", "all-reduce", "--fabric", "jalapeno-rack", "--group-size", "8", "--size", "64MiB",
            "--fail", "node:r00/lsw0,node:r00/lsw1", hint="--fail",
            match="--fail node:r00/lsw0 --fail node:r00/lsw1")
