"""``docs/settings-parity.md`` has a row for every setting, method and capability pydantic-ai declares for
``AnthropicModel``, and each row says one of four things (never "accepted and ignored").

The names are read from pydantic-ai itself: ``ModelSettings``'s keys, ``AnthropicModelSettings``'s keys and
``AnthropicModel``'s public methods from the source of ``pydantic_ai.models.anthropic`` (parsed, not imported: the
``anthropic`` package need not be installed), ``Model``'s public names, the native tool types and the capability
classes the Anthropic module defines. A name pydantic-ai adds later fails here until the page says what happens to it.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import warnings
from pathlib import Path

import pytest
from pydantic_ai.exceptions import UnsupportedSettingWarning
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.native_tools import NATIVE_TOOL_TYPES
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition

from claudecode_model import ClaudeCodeModel

PAGE = Path(__file__).parents[2] / "docs" / "settings-parity.md"
STATUSES = {"honoured", "mapped", "warned", "refused"}


def _anthropic_module() -> ast.Module:
    spec = importlib.util.find_spec("pydantic_ai")
    assert spec is not None
    assert spec.submodule_search_locations
    source = Path(spec.submodule_search_locations[0], "models", "anthropic", "__init__.py")
    return ast.parse(source.read_text())


def _classes() -> dict[str, ast.ClassDef]:
    return {node.name: node for node in _anthropic_module().body if isinstance(node, ast.ClassDef)}


def standard_settings() -> set[str]:
    return set(ModelSettings.__annotations__)


def anthropic_settings() -> set[str]:
    body = _classes()["AnthropicModelSettings"].body
    return {node.target.id for node in body if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)}


def methods() -> set[str]:
    own = {
        node.name
        for node in _classes()["AnthropicModel"].body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("_")
    }
    return own | {name for name in dir(Model) if not name.startswith("_")}


def _base_name(base: ast.expr) -> str:
    """``AbstractCapability`` of ``AbstractCapability[AgentDepsT]``."""
    node = base.value if isinstance(base, ast.Subscript) else base
    return node.id if isinstance(node, ast.Name) else ""


def capabilities() -> set[str]:
    classes = _classes().values()
    anthropic = {node.name for node in classes if any(_base_name(base).endswith("Capability") for base in node.bases)}
    return anthropic | {tool.__name__ for tool in NATIVE_TOOL_TYPES.values()}


def rows() -> dict[str, str]:
    """Each name of the page's tables (``a`` / ``b`` rows name both) → its status."""
    found: dict[str, str] = {}
    for line in PAGE.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        for name in re.findall(r"`([^`]+)`", cells[0]):
            found[name] = cells[1]
    return found


@pytest.mark.parametrize("declared", [standard_settings, anthropic_settings, methods, capabilities])
def test_every_declared_name_has_a_row(declared):
    missing = sorted(declared() - rows().keys())
    assert missing == [], f"docs/settings-parity.md says nothing of {missing}"


def test_each_row_says_one_of_four_things():
    odd = {name: status for name, status in rows().items() if status not in STATUSES}
    assert odd == {}


def test_the_declarations_are_read():
    assert {"tool_choice", "cache", "temperature"} <= standard_settings()
    assert {"anthropic_cache", "anthropic_effort"} <= anthropic_settings()
    assert {"count_tokens", "compact_messages", "request_stream", "batch_create"} <= methods()
    assert {"AnthropicCompaction", "CodeExecutionTool", "MemoryTool", "WebSearchTool"} <= capabilities()


def test_a_removed_row_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    page = PAGE.read_text()
    shortened = tmp_path / "settings-parity.md"
    shortened.write_text("\n".join(line for line in page.splitlines() if not line.startswith("| `temperature`")))
    monkeypatch.setattr(f"{__name__}.PAGE", shortened)

    assert "temperature" in sorted(standard_settings() - rows().keys())


def _warned(settings: dict[str, object]) -> set[str]:
    model = ClaudeCodeModel()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        params = ModelRequestParameters(function_tools=[ToolDefinition(name="lookup")])  # parallel_tool_calls=False
        model.prepare_request(settings, params)  # type: ignore[arg-type]
    return {
        match.group(1)
        for warning in caught
        if issubclass(warning.category, UnsupportedSettingWarning)
        and (match := re.search(r"The `(\w+)` setting", str(warning.message)))
    }


def _example(name: str) -> object:
    return {"stop_sequences": ["x"], "parallel_tool_calls": False, "logit_bias": {}, "extra_headers": {}}.get(name, 1)


def test_every_setting_the_page_calls_warned_warns():
    table = rows()
    warned = sorted(name for name in standard_settings() | anthropic_settings() if table.get(name) == "warned")
    settings = {name: _example(name) for name in warned}

    assert sorted(_warned(settings)) == warned
