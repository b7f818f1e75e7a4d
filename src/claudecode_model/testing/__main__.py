"""``python -m claudecode_model.testing``: a standalone offline backend (see :mod:`claudecode_model.testing._serve`)."""

from __future__ import annotations

import argparse

from claudecode_model.testing._serve import add_arguments, serve


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m claudecode_model.testing",
        description="Run the offline backend and print the environment a Claude Code CLI needs to use it.",
    )
    add_arguments(parser)
    return serve(parser.parse_args())


if __name__ == "__main__":
    raise SystemExit(main())
