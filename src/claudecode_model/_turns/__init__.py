"""One request's turn: preparing it, getting its session, running it, parking it for tool results (the lot, the
run scope).

May import: `_process`, `_history`, `_tools`, `_sessions`, `_stream` and the foundation.
"""
