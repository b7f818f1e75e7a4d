"""The standard ``done`` tool: ends the run with the model's final message."""

from __future__ import annotations

from pydantic_ai import ToolOutput

__all__ = ["DONE_TOOL_NAME", "done", "done_output"]

DONE_TOOL_NAME = "done"

_DESCRIPTION = (
    "Finish the task. Call this once the work is complete, with the final message for the user; "
    "the conversation ends immediately and any other tool calls in the same reply are not run."
)


def done(message: str) -> str:
    """Finish the task with ``message`` as the final answer.

    Args:
        message: The final message for the user.
    """
    return message


def done_output(*, name: str = DONE_TOOL_NAME, description: str = _DESCRIPTION) -> ToolOutput[str]:
    """The ``done(message)`` tool as a pydantic-ai output tool: calling it ends the run with ``message``.

    Pass it in ``output_type`` next to the agent's other outputs, with ``end_strategy="early"`` so that other
    tool calls of the same reply are not run (pydantic-ai's default ``"graceful"`` still runs the calls the
    model made before ``done``). The model may still end the run with plain text when ``str`` is an output.

    Example:
        ```python
        agent = Agent(model, output_type=[str, done_output()], end_strategy="early")
        result = await agent.run("Tidy the notes, then call done.")
        result.output  # the message given to done
        ```
    """
    return ToolOutput(done, name=name, description=description)
