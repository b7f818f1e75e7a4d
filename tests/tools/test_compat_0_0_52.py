"""Drop-in compatibility with claudecode-model 0.0.52: every public name of its modules imports from its old path,
and the documented shapes and behaviour of the important ones hold. Names left out on purpose are listed in
``docs/compatibility.md`` with their replacement; the test checks that too."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
from pathlib import Path

import pytest
from claude_agent_sdk import SdkMcpTool
from pydantic import BaseModel
from pydantic_ai import Agent, RunContext, Tool
from pydantic_ai.models.test import TestModel

from tests._support.mcp import mcp_session

OLD_PUBLIC_NAMES: dict[str, list[str]] = {
    "claudecode_model.tool_converter": [
        "JsonSchema",
        "McpTextContent",
        "McpResponse",
        "McpServerConfig",
        "create_async_handler",
        "convert_tool",
        "convert_tool_with_deps",
        "convert_tool_with_context",
        "convert_tools_to_mcp_server",
        "convert_mixed_tools_to_mcp_server",
    ],
    "claudecode_model.deps_support": [
        "DepsBearer",
        "DepsContext",
        "ToolCallContext",
        "create_deps_context",
        "deserialize_deps",
        "is_instance_serializable",
        "is_serializable_type",
        "serialize_deps",
    ],
    "claudecode_model.mcp_integration": [
        "MCP_SERVER_NAME",
        "AgentToolset",
        "PydanticAITool",
        "ToolDefinition",
        "ToolValidationError",
        "ToolWrapperFunc",
        "convert_tool_definition",
        "create_mcp_server_from_tools",
        "create_tool_wrapper",
        "extract_tools_from_toolsets",
        "get_parameters_json_schema",
    ],
    "claudecode_model.exceptions": [
        "ErrorType",
        "ClaudeCodeError",
        "CLINotFoundError",
        "CLIExecutionError",
        "CLIInterruptedError",
        "CLIResponseParseError",
        "UnsupportedDepsTypeError",
        "ToolsetNotRegisteredError",
        "ToolNotFoundError",
        "TypeHintResolutionError",
        "MissingDepsError",
        "IPCError",
        "IPCConnectionError",
        "IPCMessageSizeError",
        "IPCToolExecutionError",
        "BridgeStartupError",
        "StructuredOutputError",
    ],
    "claudecode_model.ipc": ["TransportType", "DEFAULT_TRANSPORT"],
    "claudecode_model.ipc.protocol": [
        "MAX_MESSAGE_SIZE",
        "LENGTH_PREFIX_SIZE",
        "SOCKET_PERMISSIONS",
        "SOCKET_FILE_PREFIX",
        "SOCKET_FILE_SUFFIX",
        "SCHEMA_FILE_PREFIX",
        "CallToolParams",
        "IPCRequest",
        "ToolResultContent",
        "ToolResult",
        "IPCResponse",
        "IPCErrorPayload",
        "IPCErrorResponse",
        "ToolSchema",
        "send_message",
        "receive_message",
    ],
    "claudecode_model.ipc.server": ["ToolHandler", "IPCSession"],
    "claudecode_model.ipc.bridge": ["load_schemas", "schemas_to_mcp_tools"],
    "claudecode_model.model": ["ClaudeCodeModel"],
}

LEFT_OUT_ON_PURPOSE = {
    "claudecode_model.ipc.server": ["IPCServer"],
    "claudecode_model.ipc.bridge": ["IPCClient", "create_bridge_server"],
}
"""0.0.52 names this project does not provide, each with its reason and replacement in docs/compatibility.md."""

COMPATIBILITY_PAGE = Path(__file__).resolve().parents[2] / "docs" / "compatibility.md"


@pytest.mark.parametrize("module_name", sorted(OLD_PUBLIC_NAMES))
def test_every_public_name_of_0_0_52_imports_from_its_old_path(module_name: str) -> None:
    module = importlib.import_module(module_name)

    missing = [name for name in OLD_PUBLIC_NAMES[module_name] if not hasattr(module, name)]

    assert missing == []


def test_names_left_out_on_purpose_are_documented_with_a_replacement() -> None:
    page = COMPATIBILITY_PAGE.read_text(encoding="utf-8")

    for module_name, names in LEFT_OUT_ON_PURPOSE.items():
        module = importlib.import_module(module_name)
        for name in names:
            assert not hasattr(module, name), f"{module_name}.{name} exists now: move it to OLD_PUBLIC_NAMES"
            assert f"`{module_name.removeprefix('claudecode_model.')}.{name}`" in page
    assert "## Migration" in page


def weather_agent() -> Agent[None, str]:
    agent = Agent(TestModel())

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"Sunny in {city}"

    return agent


async def test_convert_tools_to_mcp_server_with_server_version_returns_name_version_and_tools() -> None:
    from claudecode_model.tool_converter import convert_tools_to_mcp_server

    tools = list(weather_agent()._function_toolset.tools.values())

    config = convert_tools_to_mcp_server(tools, server_name="my-server", server_version="1.0.0")

    assert config["name"] == "my-server"
    assert config["version"] == "1.0.0"
    assert [tool.name for tool in config["tools"]] == ["get_weather"]
    assert isinstance(config["tools"][0], SdkMcpTool)
    answer = await config["tools"][0].handler({"city": "Kyoto"})
    assert answer["content"] == [{"type": "text", "text": "Sunny in Kyoto"}]


async def test_mcp_integration_old_names_and_argument_order() -> None:
    from claudecode_model.mcp_integration import (
        MCP_SERVER_NAME,
        create_mcp_server_from_tools,
        create_tool_wrapper,
        extract_tools_from_toolsets,
        get_parameters_json_schema,
    )

    tools = list(weather_agent()._function_toolset.tools.values())

    assert MCP_SERVER_NAME == "pydantic_tools"
    assert extract_tools_from_toolsets(None) == []
    assert [definition["name"] for definition in extract_tools_from_toolsets(tools)] == ["get_weather"]
    assert get_parameters_json_schema(tools[0])["required"] == ["city"]
    config = create_mcp_server_from_tools(MCP_SERVER_NAME, tools, "2.0.0")
    assert config["type"] == "sdk"
    assert config["name"] == "pydantic_tools"
    async with mcp_session(config) as session:
        assert [tool["name"] for tool in await session.list_tools()] == ["get_weather"]
    async with mcp_session(create_mcp_server_from_tools()) as session:
        assert await session.list_tools() == []

    async def add(x: int, y: int) -> int:
        return x + y

    wrapper = create_tool_wrapper("add", add)
    assert (await wrapper({"x": 1, "y": 2}))["content"] == [{"type": "text", "text": "3"}]


async def test_mcp_integration_takes_bare_functions_tools_without_function_and_duck_typed_tools() -> None:
    from unittest.mock import MagicMock

    from claudecode_model.exceptions import ToolValidationError
    from claudecode_model.mcp_integration import (
        convert_tool_definition,
        create_mcp_server_from_tools,
        create_tool_wrapper,
        extract_tools_from_toolsets,
    )

    async def multiply(a: int, b: int) -> int:
        return a * b

    wrapper = create_tool_wrapper(multiply)
    assert (await wrapper({"a": 6, "b": 7}))["content"] == [{"type": "text", "text": "42"}]

    planned = MagicMock()  # a mock's takes_ctx is a truthy mock, not True
    planned.name, planned.description, planned.function = "plan", "Plan later", None
    planned.parameters_json_schema = {"type": "object", "properties": {}}
    [definition] = extract_tools_from_toolsets([planned])
    assert definition["function"] is None
    with pytest.raises(ToolValidationError, match="'plan' has no function registered"):
        convert_tool_definition(definition)

    planned.function = multiply
    async with mcp_session(create_mcp_server_from_tools(name="pydantic_tools", toolsets=[planned])) as session:
        assert [tool["name"] for tool in await session.list_tools()] == ["plan"]

    nameless = MagicMock()
    nameless.name = "   "
    with pytest.raises(ToolValidationError, match="Tool name cannot be empty"):
        extract_tools_from_toolsets([nameless])


def test_converting_what_is_no_tool_raises_type_error_and_bad_deps_text_a_json_error() -> None:
    import json

    from claudecode_model.deps_support import deserialize_deps
    from claudecode_model.tool_converter import convert_tool, convert_tool_with_deps

    with pytest.raises(TypeError, match=r"convert_tool\(\) expected a pydantic-ai Tool"):
        convert_tool("not a tool")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"convert_tool_with_deps\(\) expected a pydantic-ai Tool"):
        convert_tool_with_deps("not a tool", {"key": "value"})  # type: ignore[arg-type]
    with pytest.raises(json.JSONDecodeError):
        deserialize_deps("not valid json", dict)
    with pytest.raises(json.JSONDecodeError):
        deserialize_deps("{broken", ApiConfig)

    def lookup(ctx: RunContext[str], key: str) -> str:
        return ctx.deps + key

    with pytest.raises(NotImplementedError, match="takes_ctx=True are not supported"):
        convert_tool(Tool(lookup))


async def test_create_async_handler_wraps_a_bare_function_and_reports_errors() -> None:
    from claudecode_model.tool_converter import create_async_handler

    def shout(text: str) -> str:
        if not text:
            raise ValueError("nothing to shout")
        return text.upper()

    handler = create_async_handler(shout, takes_ctx=False)

    assert (await handler({"text": "hi"}))["content"] == [{"type": "text", "text": "HI"}]
    failed = await handler({"text": ""})
    assert failed["isError"] is True
    assert "nothing to shout" in failed["content"][0]["text"]


@dataclasses.dataclass
class ApiConfig:
    base_url: str


async def test_deps_helpers_and_contexts() -> None:
    from claudecode_model.deps_support import (
        DepsBearer,
        DepsContext,
        ToolCallContext,
        create_deps_context,
        is_instance_serializable,
    )
    from claudecode_model.exceptions import UnsupportedDepsTypeError
    from claudecode_model.tool_converter import convert_tool_with_context

    assert is_instance_serializable({"api_key": "secret"})
    assert is_instance_serializable(ApiConfig("https://x"))
    assert not is_instance_serializable(asyncio.Lock())
    context = create_deps_context({"api_key": "secret"})
    assert isinstance(context, DepsContext)
    assert context.deps == {"api_key": "secret"}
    assert isinstance(context, DepsBearer)
    with pytest.raises(UnsupportedDepsTypeError) as refused:
        create_deps_context(asyncio.Lock())
    assert refused.value.type_name == "Lock"

    lock = asyncio.Lock()  # any deps: a ToolCallContext does not check them

    def locked(ctx: RunContext[asyncio.Lock], name: str) -> str:
        return f"{name}: {ctx.deps.locked()} via {ctx.tool_name}"

    tool = convert_tool_with_context(Tool(locked, takes_ctx=True), ToolCallContext(lock))
    assert (await tool.handler({"name": "lock"}))["content"] == [{"type": "text", "text": "lock: False via locked"}]


def test_exception_attributes_of_0_0_52() -> None:
    from claudecode_model.exceptions import (
        CLIExecutionError,
        CLIProcessError,
        CLITimeoutError,
        MissingDepsError,
        ToolNotFoundError,
        ToolsetNotRegisteredError,
        TypeHintResolutionError,
        UnsupportedDepsTypeError,
    )
    from claudecode_model.mcp_integration import filter_tools_for_request
    from claudecode_model.tool_converter import convert_tool

    old_style = UnsupportedDepsTypeError("AsyncClient")
    assert old_style.type_name == "AsyncClient"
    assert "Unsupported dependency type: AsyncClient" in str(old_style)
    tools = weather_agent()._function_toolset
    with pytest.raises(ToolNotFoundError) as not_found:
        filter_tools_for_request(tools, ["get_weather", "nope"])
    assert not_found.value.missing_tools == ["nope"]
    assert not_found.value.available_tools == ["get_weather"]
    with pytest.raises(ToolsetNotRegisteredError) as not_registered:
        filter_tools_for_request(None, ["get_weather"])
    assert not_registered.value.requested_tools == ["get_weather"]

    @dataclasses.dataclass
    class Broken:
        value: Missing  # type: ignore[name-defined]  # noqa: F821

    from claudecode_model.deps_support import is_serializable_type

    with pytest.raises(TypeHintResolutionError) as unresolved:
        is_serializable_type(Broken)
    assert unresolved.value.type_name == Broken.__qualname__
    assert isinstance(unresolved.value.original_error, NameError)

    assert issubclass(CLIProcessError, CLIExecutionError)
    timeout = CLITimeoutError("slow", timeout=1.0)
    assert isinstance(timeout, CLIExecutionError)
    assert (timeout.error_type, timeout.recoverable) == ("timeout", True)
    assert CLIExecutionError("x", exit_code=2, error_type="unknown").exit_code == 2

    def needs_ctx(ctx: RunContext[None], x: int) -> int:
        return x

    with pytest.raises(MissingDepsError):
        convert_tool(Tool(needs_ctx, takes_ctx=True))
    assert issubclass(MissingDepsError, NotImplementedError)


class Note(BaseModel):
    text: str


async def test_ipc_protocol_framing_round_trip_and_size_limit() -> None:
    from claudecode_model.exceptions import IPCError, IPCMessageSizeError
    from claudecode_model.ipc.protocol import MAX_MESSAGE_SIZE, receive_message, send_message

    reader = asyncio.StreamReader()

    class Writer:
        def write(self, data: bytes) -> None:
            reader.feed_data(data)

        async def drain(self) -> None:
            return None

    await send_message(Writer(), {"method": "call_tool", "params": {"name": "t", "arguments": {}}})  # type: ignore[arg-type]
    assert await receive_message(reader) == {"method": "call_tool", "params": {"name": "t", "arguments": {}}}
    with pytest.raises(IPCMessageSizeError):
        await send_message(Writer(), {"text": "x" * (MAX_MESSAGE_SIZE + 1)})  # type: ignore[arg-type]
    reader.feed_eof()
    with pytest.raises(IPCError):
        await receive_message(reader)


def test_bridge_schema_helpers(tmp_path: Path) -> None:
    from claudecode_model.ipc.bridge import load_schemas, schemas_to_mcp_tools

    path = tmp_path / "schemas.json"
    path.write_text('[{"name": "echo", "description": "Echo.", "input_schema": {"type": "object", "properties": {}}}]')

    schemas = load_schemas(path)
    tools = schemas_to_mcp_tools(schemas)

    assert schemas[0]["name"] == "echo"
    assert [(tool.name, tool.description) for tool in tools] == [("echo", "Echo.")]
