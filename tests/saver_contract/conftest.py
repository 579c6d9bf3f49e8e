"""The vendored conformance package holds `test_*.py` spec modules that take a saver argument:
they are run by `validate()` (see `test_conformance.py`), not collected by pytest."""

collect_ignore_glob = ["conformance/*"]
