"""The examples in the docstrings run and print what they say."""
import doctest
import importlib
import pkgutil

import pytest

# every module, sub-packages' modules too (topo.routing is a package of policies)
MODULES = sorted(m.name for pkg in ("fabricsim.topo", "fabricsim.collectives", "fabricsim.fabrics")
                 for m in pkgutil.walk_packages(importlib.import_module(pkg).__path__, prefix=pkg + "."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
