"""``BadInput`` carries the parameter it is about (issue 26 item 3), and the CLI maps it to its option
through one table (``cli.PARAMS``), never by reading the message."""
import ast
import pickle

import click
import pytest

from fabricsim.topo.errors import BadInput, about
from repo_paths import ROOT




def test_param_is_kept_and_optional():
    assert BadInput("x").param is None
    e = BadInput("group size 7 does not divide 72", param="group_size")
    assert (e.param, str(e), e.args) == ("group_size", "group size 7 does not divide 72", ("group size 7 does not divide 72",))
    back = pickle.loads(pickle.dumps(e))      # sweep workers raise it back to the parent process
    assert type(back) is BadInput and back.param == "group_size" and str(back) == str(e)


def test_about_fills_only_an_unnamed_parameter():
    with pytest.raises(BadInput) as e, about("mesh"):
        raise BadInput("tp=7 covers 7 chips")
    assert e.value.param == "mesh"
    with pytest.raises(BadInput) as e, about("mesh"):
        raise BadInput("--over 'ep' is not a mesh dimension", param="over")
    assert e.value.param == "over"
    with pytest.raises(KeyError), about("mesh"):   # other errors pass through untouched
        raise KeyError("x")


@pytest.fixture(scope="module")
def rack():
    from fabricsim.fabrics import build
    return build("jalapeno-rack")


def _param(fn, *args, **kw):
    with pytest.raises(BadInput) as e:
        fn(*args, **kw)
    return e.value.param


def test_entry_points_name_their_parameter(rack):
    from fabricsim.collectives.placement import by_mesh, by_size, parse_mesh, parse_placement
    from fabricsim.collectives.runs import GroupSpec, price_options
    from fabricsim.fabrics.loader import load_fabric
    assert _param(by_size, rack, 7) == "group_size"
    assert _param(by_size, rack, 8, count=100) == "count"
    assert _param(parse_placement, "packd") == "placement"
    assert _param(by_mesh, rack, parse_mesh("tp=8,dp=16"), "ep") == "over"
    assert _param(price_options, "all-reduce", algorithm="rin") == "algorithm"
    assert _param(price_options, "all-reduce", size="1.5B") == "size"
    assert _param(GroupSpec, over="ep") == "over"
    assert _param(GroupSpec, group_size=8, mesh="tp=8") == "group_size"
    assert _param(GroupSpec(mesh="tp=7", over="tp").groups_on, rack) == "mesh"
    assert _param(load_fabric, "nvl27") == "fabric"
    assert _param(load_fabric, "nvl27", param="fabrics") == "fabrics"
    assert _param(load_fabric, "torus", ["dims=8xq"]) == "set"
    assert _param(load_fabric, "torus", ["dims"]) == "set"


def test_step_names_mesh_batch_and_skew(rack):
    from fabricsim.collectives.runs import step_jobs
    assert _param(step_jobs, {"r": rack}, "deepseek-r1", "ep=128,pp=2") == "mesh"
    assert _param(step_jobs, {"r": rack}, "deepseek", "ep=128") == "model"
    assert _param(step_jobs, {"r": rack}, "deepseek-r1", "ep=128", batch=0) == "batch"
    assert _param(step_jobs, {"r": rack}, "deepseek-r1", "ep=128", skew="zipf:x") == "skew"
    assert _param(step_jobs, {"r": rack}, "deepseek-r1", "ep=256") == "mesh"


@pytest.mark.parametrize("command, param, shown", [
    (["price"], "group_size", "--group-size"), (["price"], "groups", "--groups"), (["price"], "fabric", "--fabric"),
    (["price"], "options", "options"), (["price"], "moe", "--moe"), (["price"], "traffic", "--traffic"),
    (["audit"], "fabric", "FABRIC"), (["compare"], "fabrics", "--fabrics"), (["compare"], "set", "--set"),
    (["sweep"], "failure_class", "--class"), (["domains"], "classes", "--class"), (["atlas"], "classes", "--classes"),
    (["atlas"], "failure_class", "--classes"), (["sweep"], "resume", "--resume"), (["step"], "fabrics", "--fabrics"),
    (["serve"], "fails", "--fail"), (["whatif"], "fails", "--fail"), (["mix"], "spec", "SPEC"),
    (["mix"], "chakra", "--chakra"), (["import", "nccl-topo"], "xml_file", "FILE.xml"),
    (["step"], "dispatch_dtype", "--dispatch-dtype"), (["calibrate"], "logs", "LOGS")])
def test_one_table_maps_a_parameter_to_the_command_option(command, param, shown):
    from fabricsim.cli import main
    from fabricsim.cli import option_for
    cmd = main
    for name in command:
        cmd = cmd.commands[name]
    assert option_for(click.Context(cmd), param) == shown


def test_every_parameter_the_library_names_is_an_option_of_some_command():
    """A param= spelled at a raise site reaches an option somewhere (a typo would fall back to --name)."""
    from fabricsim.cli import main
    from fabricsim.cli import PARAMS
    click_names = {p.name for c in _commands(main) for p in c.params}
    library = set()
    for path in [*ROOT.glob("collectives/**/*.py"), *ROOT.glob("topo/**/*.py"), *ROOT.glob("fabrics/**/*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.keyword) and node.arg == "param" and isinstance(node.value, ast.Constant):
                library.add(node.value.value)
            if (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "about" and node.args
                    and isinstance(node.args[0], ast.Constant)):
                library.add(node.args[0].value)
    assert len(library) > 30      # the walk finds them
    missing = {p for p in library if not any(n in click_names for n in PARAMS.get(p, (p,)))}
    assert missing == {"options"}     # the price options as a whole: shown as "options"


def _commands(group):
    for c in group.commands.values():
        yield c
        if isinstance(c, click.Group):
            yield from _commands(c)


def test_the_cli_reads_no_error_message():
    """``str(exc)`` in the CLI modules only ever goes straight into another exception (no hint from its text)."""
    for path in ("cli.py",):
        tree = ast.parse((ROOT / path).read_text())
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "str" and node.args \
                    and isinstance(node.args[0], ast.Name) and node.args[0].id == "exc":
                up = parents[node]
                assert isinstance(up, ast.Call) and isinstance(parents[up], ast.Raise), (path, node.lineno)


def test_export_suffixes_are_the_formats():
    """-o of export takes exactly the suffixes topo.export_text.EXPORT_FORMATS writes (read, not retyped)."""
    from click.testing import CliRunner

    from fabricsim.cli import main
    from fabricsim.topo.export_text import EXPORT_FORMATS

    def invoke(*args):
        return CliRunner().invoke(main, list(args))
    for sfx in {s for sfx in EXPORT_FORMATS.values() for s in sfx}:
        assert invoke("export", "nvl72", "-o", f"/nonexistent-dir/x{sfx}").output.count("does not exist") == 1
    assert "use a file name ending in" in invoke("export", "nvl72", "-o", "x.csv").output
