"""Every option of the installed claude-agent-sdk is a decision of this library: mapped, set internally, or declined."""

from __future__ import annotations

import dataclasses
import inspect

from claude_agent_sdk import ClaudeAgentOptions
from pydantic_ai.settings import ModelSettings

from claudecode_model import ClaudeCodeModel
from claudecode_model._sessions.sdk_options import SDK_OPTIONS, Exposed, Internal, NotExposed
from claudecode_model.settings import ClaudeCodeModelSettings


def test_every_sdk_option_is_mapped_set_internally_or_declined_with_a_reason() -> None:
    fields = {field.name for field in dataclasses.fields(ClaudeAgentOptions)}

    unknown = sorted(fields - SDK_OPTIONS.keys())
    gone = sorted(SDK_OPTIONS.keys() - fields)

    assert not unknown, (
        f"claude-agent-sdk's ClaudeAgentOptions has new fields {unknown}: map each to a setting, set it internally, "
        "or list it as NotExposed with the reason in src/claudecode_model/_sessions/sdk_options.py"
    )
    assert not gone, f"ClaudeAgentOptions no longer has {gone}: update src/claudecode_model/_sessions/sdk_options.py"


def test_each_exposed_option_names_a_setting_or_constructor_argument_that_exists() -> None:
    settings = {*ClaudeCodeModelSettings.__required_keys__, *ClaudeCodeModelSettings.__optional_keys__}
    settings |= {*ModelSettings.__required_keys__, *ModelSettings.__optional_keys__}
    arguments = set(inspect.signature(ClaudeCodeModel.__init__).parameters)

    missing = [
        (option, name)
        for option, use in SDK_OPTIONS.items()
        if isinstance(use, Exposed)
        for name in use.via
        if name not in settings | arguments
    ]

    assert missing == []


def test_each_option_not_exposed_or_internal_says_why() -> None:
    reasons = {option: use.why for option, use in SDK_OPTIONS.items() if isinstance(use, Internal | NotExposed)}

    assert reasons
    assert all(len(why) > 20 for why in reasons.values()), reasons
