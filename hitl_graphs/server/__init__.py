"""`hitl serve`: the HTTP API and the web inbox over the same database the CLI uses.

Needs the `web` extra: `pip install hitl-graphs[web]`.
"""

from hitl_graphs.server.app import create_app

__all__ = ["create_app"]
