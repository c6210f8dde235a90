"""`make compat`'s two servers, without running them: the commands, the chat template and the report.

The runs themselves are opt-in (they build llama.cpp and serve a real model); these tests pin what a run
depends on: llama-server is started with the committed tool-declaring template and the ``llama-server``
profile (which forces a tool with ``required``), the template really renders the tools and the calls in
the markup it declares, and writing one server's section of docs/compat.md keeps the other's as it was.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import jinja2
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from compat_run.report import merge_section  # noqa: E402
from compat_run.server import CHAT_TEMPLATE, LlamaCppPythonServer, LlamaCppServer, model_env  # noqa: E402

from activities.model.model_settings import load_model_settings  # noqa: E402
from activities.model.provider_profiles import profile  # noqa: E402

TOOLS: list[dict[str, object]] = [
    {
        "type": "function",
        "function": {
            "name": "get_order",
            "description": "One order of the verified customer.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string", "pattern": "^QH-[0-9]{4}$"}},
                "required": ["order_id"],
            },
        },
    },
    {"type": "function", "function": {"name": "list_orders", "parameters": {"type": "object", "properties": {}}}},
]


def render(messages: list[dict[str, object]], tools: list[dict[str, object]] | None) -> str:
    env = ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined)
    env.filters["tojson"] = lambda value: json.dumps(value, ensure_ascii=False)
    template = env.from_string(CHAT_TEMPLATE.read_text(encoding="utf-8"))
    return template.render(messages=messages, tools=tools, bos_token="<bos>", add_generation_prompt=True)


def test_llama_server_runs_with_the_committed_template_and_its_own_profile(tmp_path: Path) -> None:
    server = LlamaCppServer(
        binary=tmp_path / "llama-server", model=tmp_path / "m.gguf", port=8123, log_path=tmp_path / "l", threads=2
    )
    command = server.command()
    assert "--jinja" in command
    assert command[command.index("--chat-template-file") + 1] == str(CHAT_TEMPLATE)
    assert CHAT_TEMPLATE.is_file()
    assert command[command.index("--threads") + 1] == "2"
    settings = load_model_settings(model_env(server, "gemma", 300))
    assert settings.profile == "llama.cpp"
    forced = profile(settings.profile).forced_tool(TOOLS, "get_order")
    assert forced["tool_choice"] == "required"
    assert [tool["function"]["name"] for tool in forced["tools"]] == ["get_order"]


def test_llama_cpp_python_forces_a_tool_with_the_object_form(tmp_path: Path) -> None:
    server = LlamaCppPythonServer(
        python=tmp_path / "python", model=tmp_path / "m.gguf", port=8124, log_path=tmp_path / "l", threads=2
    )
    assert "--n_threads" in server.command()
    settings = load_model_settings(model_env(server, "gemma", 300))
    assert settings.profile == "llama-cpp-python"
    forced = profile(settings.profile).forced_tool(TOOLS, "get_order")
    assert forced["tool_choice"] == {"type": "function", "function": {"name": "get_order"}}


def test_the_template_declares_every_tool_and_renders_calls_and_results() -> None:
    messages: list[dict[str, object]] = [
        {"role": "system", "content": "You answer support questions."},
        {"role": "user", "content": "Please refund QH-1001."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_order", "arguments": '{"order_id": "QH-1001"}'},
                },
                {"id": "c2", "type": "function", "function": {"name": "list_orders", "arguments": {}}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"status": "delivered"}'},
        {"role": "tool", "tool_call_id": "c2", "content": "[]"},
    ]
    prompt = render(messages, TOOLS)
    assert prompt.startswith("<bos><start_of_turn>user\nYou answer support questions.")
    for tool in TOOLS:
        assert json.dumps(tool, ensure_ascii=False) in prompt
    calls = [json.loads(body) for body in re.findall(r"<tool_call>\n(.*?)\n</tool_call>", prompt)]
    assert {"name": "get_order", "arguments": {"order_id": "QH-1001"}} in calls
    assert {"name": "list_orders", "arguments": {}} in calls
    assert prompt.count("<tool_response>") == 2
    assert prompt.count("<start_of_turn>user") == 2, "both results share one user turn"
    assert prompt.endswith("<start_of_turn>model\n")


def test_without_tools_the_template_is_plain_gemma_turns() -> None:
    prompt = render([{"role": "user", "content": "Where is my parcel?"}], None)
    assert prompt == "<bos><start_of_turn>user\nWhere is my parcel?<end_of_turn>\n<start_of_turn>model\n"


def test_writing_one_servers_section_keeps_the_others() -> None:
    first = merge_section("", "llama-cpp-python", "## llama-cpp-python\n\n17 of 17 passed\n")
    assert "Not run yet: `make compat SERVER=llama-server`" in first
    both = merge_section(first, "llama-server", "## llama-server\n\n12 of 17 passed")
    assert "17 of 17 passed" in both and "12 of 17 passed" in both
    assert "Not run yet" not in both
    again = merge_section(both, "llama-cpp-python", "## llama-cpp-python\n\n16 of 17 passed")
    assert "17 of 17 passed" not in again
    assert again.index("16 of 17") < again.index("12 of 17 passed")


@pytest.mark.parametrize("server", ["llama-cpp-python", "llama-server"])
def test_the_committed_report_has_a_section_per_server(server: str) -> None:
    report = (ROOT / "docs" / "compat.md").read_text(encoding="utf-8")
    assert f"<!-- compat:{server} -->" in report and f"<!-- /compat:{server} -->" in report
