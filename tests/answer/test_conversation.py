"""The messages sent upstream: client turns kept, tool traffic dropped, instructions in one system message."""

from __future__ import annotations

from ragd.answer.conversation import client_turns, with_instructions
from ragd.types import Message, ToolCall


def test_client_tool_traffic_is_dropped() -> None:
    turns = client_turns(
        [
            Message("system", "Be brief."),
            Message("user", "hi"),
            Message("assistant", "", tool_calls=(ToolCall("c", "f", "{}"),)),
            Message("tool", "result", tool_call_id="c"),
            Message("assistant", "Hello"),
            Message("function", "old style"),
            Message("user", ""),
        ]
    )
    assert turns == [
        Message("system", "Be brief."),
        Message("user", "hi"),
        Message("assistant", "Hello"),
        Message("user", ""),
    ]


def test_instructions_join_the_leading_system_message() -> None:
    joined = with_instructions([Message("system", "Be brief.\n"), Message("user", "q")], "CONTEXT")
    assert joined == [Message("system", "Be brief.\n\nCONTEXT"), Message("user", "q")]
    added = with_instructions([Message("user", "q"), Message("system", "late")], "CONTEXT")
    assert added == [Message("system", "CONTEXT"), Message("user", "q"), Message("system", "late")]
    assert with_instructions([], "CONTEXT") == [Message("system", "CONTEXT")]
