"""The CLI process as an operating-system object: the binary, its start, its temp folder, its end.

May import: the foundation only (no other core folder).
"""
