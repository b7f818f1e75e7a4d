"""The agent's tools as MCP tools: the tool core, the two execution modes, the router, servers, approvals.

May import: `_process`, `_history` and the foundation.
"""
