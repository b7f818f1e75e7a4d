"""CLI sessions: the options a process starts with, the process owned by a task, the pool of kept ones.

May import: `_process`, `_history`, `_tools` and the foundation.
"""
