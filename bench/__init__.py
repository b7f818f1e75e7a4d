"""Benchmarks of claudecode-model against the raw claude-agent-sdk on the offline backend.

Run ``scripts/loopback-only .venv/bin/python -m bench`` from the repository root; ``--help`` for the options and
``docs/benchmarks.md`` for what each row measures and the latest numbers.
"""
