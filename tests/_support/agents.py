"""Agents for tests: tools that answer with a fixed text."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic_ai import Agent


def _answering(text: str) -> Callable[[], str]:
    def tool() -> str:
        return text

    return tool


def add_constant_tools(agent: Agent[Any, Any], **answers: str) -> None:
    """Give ``agent`` one argument-less tool per keyword, named after it, that returns its value."""
    for name, text in answers.items():
        agent.tool_plain(name=name)(_answering(text))
