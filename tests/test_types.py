"""Types that help (issue 14): `mypy --strict` holds the package, the README's examples and a
user's script, with the real mypy (its API, `mypy.api.run`).

- The package passes `mypy --strict` with the `[tool.mypy]` settings of `pyproject.toml`.
- Every python block of the README passes `mypy --strict` as a user's script, run from a folder
  outside the repository, the way a user's type checker finds an installed `hitl_graphs`. A block
  that uses names a reader defined earlier (a `runner`, their own tools) says so in an HTML comment
  right before it, `<!-- typecheck, given: ... -->`, whose lines are checked in front of it. The
  reader's own modules the README imports (`myapp.*`) and `langchain_openai` (a model provider we do
  not install) are read as untyped.
- A script in a folder outside the repository finds the package through the venv's python: the
  editable install `make` does is a plain path in a `.pth` file (`editable_mode=compat`), which
  mypy follows; setuptools' default editable install is an import hook mypy cannot see.

mypy's cache lives in the temp folder, one per checkout, so repeated runs take seconds.
"""

from __future__ import annotations

import hashlib
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import pytest
from mypy import api
from pydantic import BaseModel

from hitl_graphs import ConfigError, Runner
from hitl_graphs.examples import EmailDraft, email_workflow

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(tempfile.gettempdir()) / f"hitl-graphs-mypy-{hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]}"
GIVEN = re.compile(r"<!--\s*typecheck, given:\n(?P<given>(?:(?!-->).)*)-->\s*$", re.S)


def user_flags(config: Path) -> list[str]:
    """A user's strict run: the venv's python tells mypy where installed packages are, and no
    configuration of ours applies (`config` is the user's own)."""
    return ["--strict", "--no-error-summary", "--config-file", str(config), "--python-executable", sys.executable,
            "--cache-dir", str(CACHE)]


def mypy(*args: str) -> tuple[str, int]:
    out, err, status = api.run(list(args))
    return out + err, status


@dataclass(frozen=True)
class Block:
    line: int
    given: str
    code: str

    @property
    def script(self) -> str:
        """The block as a script: its `given` lines, then the block, its lines kept where they were."""
        return self.given + "\n" * (self.line - 1 - self.given.count("\n")) + self.code


def readme_blocks(text: str) -> list[Block]:
    blocks = []
    for match in re.finditer(r"```python\n(.*?)```", text, re.S):
        given = GIVEN.search(text[:match.start()])  # an HTML comment right before the block
        line = text.count("\n", 0, match.start(1)) + 1
        blocks.append(Block(line, given.group("given") if given else "", match.group(1)))
    return blocks


def test_the_package_passes_mypy_strict() -> None:
    out, status = mypy("--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(CACHE), str(ROOT / "hitl_graphs"))
    assert status == 0, out


@pytest.mark.slow
def test_every_readme_example_passes_mypy_strict_as_a_user_script(tmp_path: Path) -> None:
    blocks = readme_blocks((ROOT / "README.md").read_text())
    assert len(blocks) >= 9
    # the README's line numbers in mypy's messages: block N is written padded to where it stands
    files = []
    for n, block in enumerate(blocks, 1):
        path = tmp_path / f"readme_block_{n:02d}.py"
        path.write_text(block.script)
        files.append(str(path))
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\n[mypy-myapp.*]\nignore_missing_imports = True\n"
                      "[mypy-langchain_openai.*]\nignore_missing_imports = True\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)
        out, status = mypy(*user_flags(config), *files)
    assert status == 0, "README.md: " + out.replace(str(tmp_path) + "/", "")


@pytest.mark.slow
def test_a_script_outside_the_repository_finds_the_package(tmp_path: Path) -> None:
    script = tmp_path / "review.py"
    script.write_text(
        "from hitl_graphs import Approve, Runner\n"
        "from hitl_graphs.examples import EmailDraft, email_workflow\n\n"
        "with Runner.open(':memory:', workflows=[email_workflow()]) as runner:\n"
        "    view = runner.start('email', {'to': 'ana@example.com', 'topic': 'lunch'})\n"
        "    subject: str = view.reviews[0].payload_as(EmailDraft)['subject']\n"
        "    runner.resume(view.thread_id, Approve(actor='ana'))\n"
        "    wrong: int = view.reviews[0].payload_as(EmailDraft)['subject']\n"
    )
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)
        out, status = mypy(*user_flags(config), script.name)
    # found, and read with its types: the one error is the line that misuses them
    assert out.splitlines() == [
        'review.py:8: error: Incompatible types in assignment (expression has type "str", variable has type "int")  '
        "[assignment]"
    ]
    assert status == 1


# --- typed payload access: what the type checker is promised holds at run time ---

class Mail(BaseModel):
    to: str
    subject: str


class Invoice(TypedDict):
    amount: int


def test_payload_as_gives_the_payload_in_the_shape_a_script_names() -> None:
    with Runner.open(":memory:", workflows=[email_workflow()]) as runner:
        review = runner.start("email", {"to": "ana@example.com", "topic": "lunch"}).reviews[0]
        draft = review.payload_as(EmailDraft)  # a `typing.TypedDict`, which pydantic refuses on Python 3.11
        assert draft == {"to": "ana@example.com", "subject": "About lunch", "body": "Hi,\n\nLet's talk about lunch.\n"}
        assert review.payload_as(Mail) == Mail(to="ana@example.com", subject="About lunch")


def test_payload_as_refuses_a_payload_without_that_shape_naming_what_differs() -> None:
    with Runner.open(":memory:", workflows=[email_workflow()]) as runner:
        view = runner.start("email", {"to": "ana@example.com", "topic": "lunch"})
        review = view.reviews[0]
        with pytest.raises(ConfigError, match=(
                rf"^the payload of review '{review.review_id}' \(kind 'gate', workflow 'email'\) does not fit Invoice: "
                r"amount: Field required; `review.payload` shows what the workflow sent: change Invoice to match it$")):
            review.payload_as(Invoice)
        assert runner.show(view.thread_id) == view  # reading is all it did
