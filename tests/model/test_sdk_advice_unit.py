"""The SDK's advice on a configuration the library chose on purpose is not shown, and only while a CLI connects."""

from __future__ import annotations

import warnings

from claude_agent_sdk import CanUseToolShadowedWarning

from claudecode_model._sessions.sdk_advice import sdk_advice_silenced


def advise() -> None:
    warnings.warn("can_use_tool will not be invoked for: Read.", CanUseToolShadowedWarning, stacklevel=1)


def test_the_advice_is_silenced_while_overlapping_connects_run_and_shown_again_after():
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        first, second = sdk_advice_silenced(True), sdk_advice_silenced(True)
        first.__enter__()
        second.__enter__()
        advise()
        first.__exit__(None, None, None)  # the first connect ends while the second still runs
        advise()
        second.__exit__(None, None, None)
        assert shown == []
        advise()
        with sdk_advice_silenced(False):  # a session without can_use_tool: nothing is silenced
            advise()
    assert [warning.category for warning in shown] == [CanUseToolShadowedWarning] * 2
