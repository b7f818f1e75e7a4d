"""A standalone offline backend, for programs of several processes: ``claudecode-model backend`` (or
``python -m claudecode_model.testing``).

It starts an :class:`~claudecode_model.testing.OfflineBackend`, prints the environment a Claude Code CLI needs to
use it (``export NAME=value`` lines, also written to ``--env-file`` once the backend listens), and serves until
interrupted (Ctrl-C or SIGTERM). Every process that has that environment, and every CLI it starts, talks to it.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

__all__ = ["add_arguments", "serve"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the backend command."""
    brain = parser.add_mutually_exclusive_group()
    brain.add_argument("--answer", default=None, help="answer every request with this text")
    brain.add_argument(
        "--brain",
        default=None,
        metavar="MODULE:NAME",
        help="the brain: a pydantic-ai model or a FunctionModel function, imported from MODULE "
        "(default: TestModel behaviour, which calls every tool once, then answers)",
    )
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--prompt-cache", action="store_true", help="imitate the API's prompt caching")
    parser.add_argument(
        "--env-file", type=Path, default=None, help="also write the environment here once the backend listens"
    )


def serve(args: argparse.Namespace) -> int:
    """Run the backend until interrupted; 2 if the brain cannot be loaded."""
    from claudecode_model.testing import OfflineBackend

    try:
        brain = _brain(args)
    except (ImportError, AttributeError, ValueError) as error:
        print(f"error: --brain {args.brain}: {error}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    with OfflineBackend(brain, port=args.port, prompt_cache=args.prompt_cache) as backend:
        text = environment_text(backend.cli_env())
        if args.env_file is not None:
            _write_atomically(args.env_file, text)
        print(text, end="", flush=True)
        print(f"# offline backend listening on {backend.url}; Ctrl-C stops it", file=sys.stderr, flush=True)
        while not stop.wait(0.5):
            pass
    if args.env_file is not None:
        args.env_file.unlink(missing_ok=True)
    return 0


def environment_text(env: dict[str, str]) -> str:
    """``export NAME=value`` lines (shell-quoted) for ``env``."""
    return "".join(f"export {name}={shlex.quote(value)}\n" for name, value in env.items())


def _brain(args: argparse.Namespace) -> Any:
    if args.answer is not None:
        return args.answer
    if args.brain is None:
        return None
    module_name, _, name = args.brain.partition(":")
    if not module_name or not name:
        raise ValueError("write MODULE:NAME, e.g. my_tests.brains:weather_brain")
    sys.path.insert(0, os.getcwd())  # a module next to the program, as `python -m` would find it
    brain = getattr(importlib.import_module(module_name), name)
    if callable(brain) and not hasattr(brain, "request"):
        from pydantic_ai.models.function import FunctionModel

        return FunctionModel(brain)
    return brain


def _write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a reader never sees half of it (a program may wait for the file)."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(handle, "w") as file:
        file.write(text)
    os.replace(temporary, path)
