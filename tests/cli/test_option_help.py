"""Every option of every command has help, and an option documented by the library shows its library text.

Option help of library parameters is read from the numpydoc of the function a notebook calls
(``cli.Option(doc=...)``), so this walks the whole command tree and renders each help record: a parameter
the docstring does not document, or a reference the CLI cannot show, fails here rather than at a user's
``--help``."""
import click
import pytest

from fabricsim.cli import Option, main
from fabricsim.topo.text import param_docs


def _commands(group, path=()):
    for name, cmd in group.commands.items():
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, (*path, name))
        else:
            yield (*path, name), cmd


COMMANDS = list(_commands(main))


@pytest.mark.parametrize("path,cmd", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_option_has_help(path, cmd):
    ctx = click.Context(cmd, info_name=path[-1])
    for p in cmd.params:
        if not isinstance(p, click.Option) or p.hidden:
            continue
        record = p.get_help_record(ctx)
        assert record is not None and len(record[1]) > 10, (path, p.name)
        assert "``" not in record[1] and ":func:" not in record[1], (path, p.name, record[1])


def test_library_documented_option_shows_the_library_text():
    from fabricsim.collectives.runs import GroupSpec
    cmd = main.commands["price"]
    ctx = click.Context(cmd, info_name="price")
    count = next(p for p in cmd.params if p.name == "count")
    assert isinstance(count, Option) and count.doc
    help_text = count.get_help_record(ctx)[1]
    # the library's text, its ``group_size`` shown as the command's option
    assert param_docs(GroupSpec)["count"].startswith("with ``group_size``: run only this many groups")
    assert help_text.startswith("With --group-size: run only this many groups")


def test_param_docs_reads_both_spellings():
    def f(a, b, c, d):
        """Summary.

        Parameters
        ----------
        a : int, optional
            Chips per group.
        b, c : str
            Both, described below their type.
        d : the ``d`` of it, described on its own line
            and continued.

        Returns
        -------
        int
        """
    assert param_docs(f) == {"a": "Chips per group.", "b": "Both, described below their type.",
                             "c": "Both, described below their type.",
                             "d": "the ``d`` of it, described on its own line and continued."}
