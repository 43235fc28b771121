"""One size rule (issue 26 item 3): ``topo.units.parse_size`` reads ``--size``, a mix file's ``size`` and a
design workload's, so the three accept and refuse the same spellings."""
import math

import pytest
from click.testing import CliRunner

from fabricsim.cli import main
from fabricsim.topo.errors import BadInput
from fabricsim.topo.units import SIZE_UNITS, parse_size


@pytest.mark.parametrize("text, value", [
    ("64MiB", 2 ** 26), ("1GB", 1e9), ("2kB", 2000), ("64mB", 64e6), (" 8 KiB ", 8192), ("1e3", 1000),
    ("1.5KiB", 1536), ("1TiB", 2 ** 40), ("7", 7), (4096, 4096), (1e3, 1000), ("0.5KB", 500)])
def test_sizes_parse(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text, words", [
    ("64Gb", ["lower-case b is bits", "64GB"]), ("2mib", ["lower-case b", "2MiB"]), ("-5MiB", ["must be positive"]),
    ("5XB", ["is not a size", "TiB", "TB"]), ("1.5B", ["whole number of bytes"]), ("0.5", [">= 1 B"]),
    ("1e400", ["finite"]), ("", ["is not a size"]), ("64 parsecs", ["is not a size"]), (-3, ["must be positive"]),
    (math.nan, ["finite"]), (math.inf, ["finite"]), (0, [">= 1 B"]), (True, ["not a number of bytes"]),
    (None, ["not a number of bytes"]), ([64], ["not a number of bytes"])])
def test_bad_sizes_name_the_parameter(text, words):
    with pytest.raises(BadInput) as e:
        parse_size(text)
    assert e.value.param == "size" and all(w in str(e.value) for w in words), str(e.value)
    with pytest.raises(BadInput) as e:
        parse_size(text, param="budget")
    assert e.value.param == "budget"


def test_every_unit_is_a_power_of_ten_or_two():
    assert all(v == 1 or math.log10(v).is_integer() or math.log2(v).is_integer() for v in SIZE_UNITS.values())


def _mix(tmp_path, size, *extra):
    f = tmp_path / "jobs.toml"
    f.write_text(f'[[job]]\nname = "a"\ncollective = "all-reduce"\nsize = "{size}"\ngroup_size = 8\n')
    return CliRunner().invoke(main, ["mix", str(f), "--fabric", "jalapeno-rack", *extra])


@pytest.mark.parametrize("size, words", [("1.5B", "whole number of bytes"), ("64Mb", "lower-case b is bits"),
                                         ("-1MiB", "must be positive"), ("5XB", "TiB")])
def test_price_and_mix_refuse_the_same_sizes(tmp_path, size, words):
    price = CliRunner().invoke(main, ["price", "all-reduce", "--fabric", "jalapeno-rack", "--group-size", "8",
                                      "--size", size])
    mix = _mix(tmp_path, size)
    for res, hint in ((price, "--size"), (mix, "SPEC")):
        err = [ln for ln in res.output.splitlines() if ln.startswith("Error:")]
        assert res.exit_code == 2 and len(err) == 1, res.output
        assert err[0].startswith(f"Error: Invalid value for {hint}:") and words in err[0], err[0]


def test_mix_reads_a_whole_size_as_price_does(tmp_path):
    import json
    res = _mix(tmp_path, "1.5KiB", "--json")
    assert res.exit_code == 0, res.output
    job = json.loads(res.output)["jobs"][0]
    assert job["bytes_total"] == 1536 * job["groups"] * job["group_size"] == 1536 * 128
