"""The rough edges a new user hits (issue 26, item 6): each test fails without its fix."""
from click.testing import CliRunner

from fabricsim.cli import main


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], prog_name="fabricsim")


# --------------------------------------------------------------------------- 1. one-line value errors
def test_bad_value_prints_error_and_hint_without_usage_block():
    res = run("price", "all-reduce", "--fabric", "nvl72", "--size", "1GiB", "--efficiency", "2")
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert lines == ["Error: Invalid value for '--efficiency': '2' is not a finite number in [1e-06, 1]",
                     "Try 'fabricsim price --help' for help."], res.output
    assert "Usage:" not in res.output


def test_bad_value_raised_by_a_command_is_one_line_too():
    res = run("price", "all-reduce", "--fabric", "nvl72", "--size", "1GiB", "--group-size", "64")
    assert res.exit_code == 2 and "Usage:" not in res.output, res.output
    assert res.output.startswith("Error: Invalid value for --group-size:"), res.output


def test_wrong_usage_keeps_the_usage_block():
    for args in (("price", "all-reduce", "--fabric", "nvl72"),                       # missing option
                 ("price", "all-reduce", "--fabric", "nvl72", "--size", "1GiB", "--bogus")):   # unknown option
        res = run(*args)
        assert res.exit_code == 2 and "Usage: fabricsim price" in res.output, res.output
