"""The README's quickstart runs as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_quickstart_runs(tmp_path: Path) -> None:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- quickstart[^>]*-->\s*```python\n(.*?)```", text, re.S)
    assert block is not None
    code = block.group(1)
    assert len(code.strip().splitlines()) <= 15
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Send this mail? About lunch"
    assert lines[1] == "done completed True"
    assert lines[2:] == ["started ", "review_requested ", "decided ana", "applied ", "completed "]


def test_readme_starts_with_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text()
    first_block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert first_block is not None
    commands = [line.split("#")[0].strip() for line in first_block.group(1).splitlines()]
    assert commands == ["make demo", "make test"]


def test_streaming_block_runs(tmp_path: Path) -> None:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- streaming[^>]*-->\s*```python\n(.*?)```", text, re.S)
    assert block is not None
    result = subprocess.run([sys.executable, "-c", block.group(1)], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["draft", "__interrupt__", "paused", "review", "send", "done completed"]
