"""A pytest plugin: under pytest-xdist, the tests of a few modules all run on one worker.

Those modules play one scenario in a module fixture that all their tests read (the documentation's code blocks, run
all at once; the worker-crash scenarios): a worker given any of their tests would play it again. The default
``--dist load`` is kept for every other test. (``--dist loadgroup`` with ``xdist_group`` markers would say the same,
but pytest-xdist 3.8 marks the groups by rewriting ``item._nodeid``, which pytest 9 no longer reads.)
"""

from __future__ import annotations

from typing import Any

import pytest

WHOLE_MODULES = frozenset(
    {
        "tests/docs/test_code_blocks.py",
        "tests/durable/test_worker_crash_cli.py",
        "tests/durable/test_temporal_worker_crash_cli.py",
    }
)
"""The modules (paths relative to the repository, as in node ids) whose tests stay together."""


def module_scope(nodeid: str) -> str:
    """The scheduling unit of a test: its module for :data:`WHOLE_MODULES`, else the test itself."""
    module = nodeid.split("::", 1)[0]
    return module if module in WHOLE_MODULES else nodeid


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "load":
        return None  # a distribution mode asked for on the command line is kept
    from xdist.scheduler import LoadScopeScheduling

    class WholeModules(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return module_scope(nodeid)

    return WholeModules(config, log)
