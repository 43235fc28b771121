"""The README is a user guide (issue 26 item 6): short, its links live, its commands real."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_readme_is_at_most_350_lines():
    assert len(README.splitlines()) <= 350


def test_the_test_command_is_what_ci_runs():
    assert "pip install -e '.[test]' && pytest -q" in README
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install -q -e '.[test]'" in ci and "\npytest -q" in ci and "\nlint-imports" in ci


def test_every_local_link_exists():
    links = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README)
    missing = [link for link in links if not (ROOT / link).exists()]
    assert links and not missing, missing


def test_every_docs_anchor_exists():
    """A link into docs/guide.md#x (or another page) names a heading or an <a id> of that page."""
    def anchors(page: str) -> set[str]:
        text = (ROOT / page).read_text()
        heads = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
                 for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}
        return heads | set(re.findall(r'<a id="([^"]+)">', text))
    bad = [f"{p}#{a}" for p, a in re.findall(r"\]\((docs/[\w.]+)#([^)]+)\)", README) if a not in anchors(p)]
    assert not bad, bad


def test_every_command_in_the_tour_exists():
    from fabricsim.cli import main
    code = "\n".join(re.findall(r"```bash\n(.*?)```", README, flags=re.S))
    used = set(re.findall(r"^fabricsim ([a-z-]+)", code, flags=re.M))
    used |= set(re.findall(r"`fabricsim ([a-z-]+)", README))
    assert used and used <= set(main.commands) | {"COMMAND"}, used - set(main.commands)


def test_notebook_snippet_imports_work():
    block = re.search(r"```python\n(.*?)```", README, flags=re.S).group(1)
    ns: dict = {}
    exec("\n".join(line for line in block.splitlines() if line.startswith(("from ", "import "))), ns)
    assert callable(ns["audit"]) and callable(ns["price"]) and callable(ns["build"])
