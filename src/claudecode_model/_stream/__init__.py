"""A turn's SDK messages to pydantic-ai parts, events, usage, details and typed errors.

May import: `_process`, `_history`, `_tools`, `_sessions` and the foundation.
"""
