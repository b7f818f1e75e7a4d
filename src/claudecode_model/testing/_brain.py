"""The backend's brain: whatever produces a pydantic-ai response for a translated request."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, cast

from pydantic_ai.messages import ModelMessage, ModelResponse, ModelResponsePart, TextPart, ToolCallPart
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.function import AgentInfo, FunctionDef, FunctionModel, StreamFunctionDef
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RequestUsage

from ._script import Failure, ScriptedTurn

if TYPE_CHECKING:
    from pydantic_ai.tools import ToolDefinition

__all__ = ["Brain", "BrainAnswer", "ScriptExhaustedError", "ScriptItem", "make_brain"]

ScriptItem: TypeAlias = ScriptedTurn | ModelResponse | str | Sequence[ModelResponsePart | str] | Failure
"""One turn of a scripted brain: a reply (response, text, or list of parts), or a failure to serve instead."""

BrainSpec: TypeAlias = Model | FunctionDef | Sequence[ScriptItem] | str | None
"""What ``OfflineBackend(brain=...)`` accepts."""


class ScriptExhaustedError(RuntimeError):
    """A scripted brain got more requests than it has turns."""


@dataclass(frozen=True)
class BrainAnswer:
    """A brain's answer to one request: a response to send (after ``delay`` seconds) or a failure to serve."""

    response: ModelResponse | None = None
    failure: Failure | None = None
    delay: float = 0.0


class Brain:
    """Produces the answer to one translated request."""

    async def answer(self, messages: list[ModelMessage], tools: list[ToolDefinition]) -> BrainAnswer:
        """Answer a request with these messages and tools."""
        raise NotImplementedError


def request_parameters(tools: list[ToolDefinition]) -> ModelRequestParameters:
    """The parameters a pydantic-ai model gets for a request offering ``tools``."""
    return ModelRequestParameters(function_tools=list(tools), allow_text_output=True)


class ModelBrain(Brain):
    """A pydantic-ai model as brain (stream-only ``FunctionModel`` included).

    ``TestModel`` and ``FunctionModel`` guess token counts from word counts; their guess is dropped so that the
    backend's own estimate (a token per four characters) applies. Usage a ``FunctionModel`` function sets on its
    response is kept.
    """

    def __init__(self, model: Model) -> None:
        self.model = model
        self._model = _keeping_explicit_usage(model)

    async def answer(self, messages: list[ModelMessage], tools: list[ToolDefinition]) -> BrainAnswer:
        params = request_parameters(tools)
        model = self._model
        if isinstance(model, FunctionModel) and model.function is None:
            async with model.request_stream(messages, None, params) as stream:
                async for _event in stream:
                    pass
                return BrainAnswer(response=_without_guessed_usage(stream.get()))
        response = await model.request(messages, None, params)
        return BrainAnswer(response=_without_guessed_usage(response) if isinstance(model, TestModel) else response)


def _without_guessed_usage(response: ModelResponse) -> ModelResponse:
    response.usage = RequestUsage()
    return response


def _keeping_explicit_usage(model: Model) -> Model:
    """For a ``FunctionModel`` with a function: a copy whose responses carry no guessed usage (explicit usage stays).

    ``FunctionModel`` guesses usage only for a response without any; a response marked as unmeasured is left alone,
    and reaches the backend with zero counts, which it then estimates itself.
    """
    if not isinstance(model, FunctionModel) or model.function is None:
        return model
    function = model.function

    def mark(response: ModelResponse) -> ModelResponse:
        if not response.usage.has_values():
            response.usage = RequestUsage(unmeasured_requests=1)
        return response

    if inspect.iscoroutinefunction(function):

        async def async_wrapped(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            return mark(await function(messages, info))

        wrapped: Any = async_wrapped
    else:

        def sync_wrapped(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            return mark(cast("ModelResponse", function(messages, info)))

        wrapped = sync_wrapped
    if model.stream_function is None:
        return FunctionModel(wrapped, model_name=model.model_name)
    return FunctionModel(wrapped, stream_function=model.stream_function, model_name=model.model_name)


def _item_answer(item: ScriptItem) -> BrainAnswer:
    match item:
        case Failure():
            return BrainAnswer(failure=item)
        case ScriptedTurn():
            return BrainAnswer(response=item.to_response(), delay=item.delay)
        case ModelResponse():
            return BrainAnswer(response=item)
        case str():
            return BrainAnswer(response=ModelResponse(parts=[TextPart(item)]))
        case _:
            parts = [TextPart(p) if isinstance(p, str) else p for p in item]
            return BrainAnswer(response=ModelResponse(parts=parts))


class ScriptBrain(Brain):
    """Replies with the given turns, one per request; running out raises :class:`ScriptExhaustedError`."""

    def __init__(self, items: Sequence[ScriptItem]) -> None:
        self._items = list(items)
        self._next = 0
        self._lock = threading.Lock()

    @property
    def remaining(self) -> int:
        """How many turns are left."""
        with self._lock:
            return len(self._items) - self._next

    async def answer(self, messages: list[ModelMessage], tools: list[ToolDefinition]) -> BrainAnswer:
        with self._lock:
            if self._next >= len(self._items):
                raise ScriptExhaustedError(
                    f"offline backend: the script is exhausted: it had {len(self._items)} turn(s) and "
                    f"request #{self._next + 1} asked for another"
                )
            item = self._items[self._next]
            self._next += 1
        await asyncio.sleep(0)
        return _item_answer(item)


STRUCTURED_OUTPUT_TOOL = "StructuredOutput"
"""The tool the CLI adds for ``output_format`` / ``--json-schema``."""


class DefaultBrain(Brain):
    """``TestModel`` behaviour, aware of the CLI's ``StructuredOutput`` tool.

    First request offering tools: call each tool once (``TestModel``), except ``StructuredOutput``.
    Later requests, or when ``StructuredOutput`` is the only tool: call ``StructuredOutput`` with arguments
    generated from its schema if it is offered, else answer with text (the tool results as JSON, or
    ``success (no tool calls)``).
    """

    def __init__(self) -> None:
        self.model = TestModel()
        self._delegate = ModelBrain(self.model)

    async def answer(self, messages: list[ModelMessage], tools: list[ToolDefinition]) -> BrainAnswer:
        structured = next((t for t in tools if t.name == STRUCTURED_OUTPUT_TOOL), None)
        others = [t for t in tools if t.name != STRUCTURED_OUTPUT_TOOL]
        responded = any(isinstance(m, ModelResponse) for m in messages)
        if structured is not None and (responded or not others):
            call = ToolCallPart(structured.name, self.model.gen_tool_args(structured))
            return BrainAnswer(response=ModelResponse(parts=[call]))
        return await self._delegate.answer(messages, others)


class ConstantBrain(Brain):
    """Replies with the same text to every request."""

    def __init__(self, text: str) -> None:
        self.text = text

    async def answer(self, messages: list[ModelMessage], tools: list[ToolDefinition]) -> BrainAnswer:
        return BrainAnswer(response=ModelResponse(parts=[TextPart(self.text)]))


def make_brain(brain: BrainSpec, stream_function: StreamFunctionDef | None = None) -> Brain:
    """Normalise what a user passed as brain."""
    if stream_function is not None:
        if brain is not None:
            raise TypeError("pass either brain or stream_function, not both")
        return ModelBrain(FunctionModel(stream_function=stream_function))
    match brain:
        case None:
            return DefaultBrain()
        case Model():
            return ModelBrain(brain)
        case str():
            return ConstantBrain(brain)
        case Sequence():
            return ScriptBrain(brain)
        case _ if callable(brain):
            return ModelBrain(FunctionModel(brain))
        case _:
            raise TypeError(f"unsupported brain {brain!r}: expected a pydantic-ai Model, a function, a list, or None")
