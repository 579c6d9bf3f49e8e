"""Where the database is when nobody says: one default that a notebook, a script and `hitl` all find.

`$HITL_DB` if set; else `checkpoints/hitl.sqlite` in the project root: the nearest folder, from
the working directory up, that holds a `pyproject.toml` or a `.git`. A notebook running in
`notebooks/` and `hitl` run at the top of the repository so open the same file (a path relative
to the working directory would give the notebook `notebooks/checkpoints/...`, a second, empty
database). Outside any project the working directory is the root.

Also here: what the CLI says when asked to read a database that is not there (a typo in `--db`
would otherwise create a new, empty one and report "nothing is waiting").
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_DB = Path("checkpoints") / "hitl.sqlite"
"""The default database, relative to the project root."""
DB_ENV = "HITL_DB"
"""The environment variable naming the database (relative paths: to the working directory)."""
ROOT_MARKERS = ("pyproject.toml", ".git")
"""What marks a project root."""


def project_root(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The nearest folder from `start` (default: the working directory) up that holds a
    `pyproject.toml` or a `.git`; None outside any project.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     _ = (Path(tmp) / "pyproject.toml").write_text("")
        ...     (Path(tmp) / "notebooks").mkdir()
        ...     project_root(Path(tmp) / "notebooks") == Path(tmp).resolve()
        True
    """
    here = Path(start if start is not None else Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if any((folder / marker).exists() for marker in ROOT_MARKERS):
            return folder
    return None


def default_db_path() -> Path:
    """`$HITL_DB` if set, else `checkpoints/hitl.sqlite` in the project root (see the module docs).

    Example:
        >>> str(default_db_path()).endswith(".sqlite")
        True
    """
    named = os.environ.get(DB_ENV)
    if named:
        return Path(named)
    root = project_root()
    return root / DEFAULT_DB if root is not None else DEFAULT_DB


def default_location() -> str:
    """Where a command or `Runner.open()` with no database named goes: `$HITL_DB` as given when it
    is a server's URL (`postgresql://...`: a `Path` would fold its `//`), else `default_db_path()`.

    Example:
        >>> os.environ[DB_ENV] = "postgresql://hitl@db.internal:5432/hitl"
        >>> default_location()
        'postgresql://hitl@db.internal:5432/hitl'
        >>> del os.environ[DB_ENV]
    """
    named = os.environ.get(DB_ENV)
    if named and "://" in named:
        return named
    return str(default_db_path())


def missing_database(path: str, source: str) -> str | None:
    """One line saying that `path` (named by `source`: `--db`, `$HITL_DB` or the default) does
    not exist and how to create it; None when it exists (or is `:memory:`, or a server's URL)."""
    if path == ":memory:" or "://" in path or Path(path).exists():
        return None
    shown = str(Path(path).resolve())
    return (f"no database at {shown} (from {source}); nothing was created: check the path, or create it with "
            f"`hitl --db {shown} init` (or start a thread there: `hitl --db {shown} run WORKFLOW`)")
