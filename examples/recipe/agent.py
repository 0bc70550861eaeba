"""Seed 003's recipe agent on ``agui_replay.server``, calling a model through the ``openai`` SDK.

A real tool loop: the model streams an ``update_recipe`` call, whose argument fragments become
``TOOL_CALL_ARGS`` *and*, through predictive state, the client's ``recipe`` as it is written;
the tool runs; the model is called again with the tool's result and streams its reply. What one
run emits::

    TOOL_CALL_START update_recipe
      TOOL_CALL_ARGS ...                  a fragment per model chunk
      STATE_SNAPSHOT, STATE_DELTA ...     the recipe growing (predictive state)
      STATE_SNAPSHOT                      the final recipe, when the tool has run
    TOOL_CALL_END, TOOL_CALL_RESULT
    TEXT_MESSAGE_START/CONTENT*/END       the model's second turn

With ``require_confirmation=True`` the run stops before the tool runs, on a ``tool_call``
interrupt; the next run (``RunAgentInput.resume``) approves — the tool runs, the final state is
published, the model replies — or rejects — the recipe goes back to what it was.

Serve it against any OpenAI-compatible endpoint::

    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 uvicorn --factory examples.recipe.agent:create_app
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, cast

from ag_ui.core import (
    AssistantMessage,
    DeveloperMessage,
    Message,
    SystemMessage,
    ToolMessage,
    UserMessage,
)
from openai import AsyncOpenAI
from pydantic import ValidationError

from agui_replay.errors import AgentError
from agui_replay.server import (
    Interrupted,
    MessageHandle,
    RunContext,
    ToolCallHandle,
    agui_app,
)

from .recipe import UPDATE_RECIPE, UPDATE_RECIPE_TOOL, RecipeState, UpdateRecipeArgs, update_recipe

INSTRUCTIONS = """You are a helpful recipe assistant that creates and modifies recipes.

CRITICAL RULES:
1. You will receive the current recipe state in the system context
2. To update the recipe, you MUST use the update_recipe tool
3. When modifying a recipe, ALWAYS include ALL existing data plus your changes in the tool call
4. NEVER delete existing ingredients or instructions - only add or modify
5. After calling the tool, provide a brief conversational message (1-2 sentences)
"""

REJECTED = "The user rejected this change, so the recipe was left as it was."
MAX_MODEL_TURNS = 4
"""A model that keeps calling tools is stopped after this many turns."""


class RecipeAgent:
    """The agent. The class attributes are what the run driver reads (as ``state_type``)."""

    state_type = RecipeState
    # seed 003: predict_state_config = {"recipe": {"tool": "update_recipe", "tool_argument": ...}}
    predict_state: ClassVar[Mapping[str, tuple[str, str]]] = {"recipe": (UPDATE_RECIPE, "recipe")}

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str = "not-needed-for-a-local-endpoint",
        model: str = "gpt-4o-mini",
        require_confirmation: bool = False,
    ) -> None:
        self.base_url = base_url
        self.api_key = api_key
        self.model = model
        self.require_confirmation = require_confirmation

    async def run(self, ctx: RunContext[RecipeState]) -> Interrupted | None:
        # One client per run: a run may be on its own event loop (run_agent_sync).
        async with AsyncOpenAI(base_url=self.base_url, api_key=self.api_key, max_retries=0) as api:
            answered: dict[str, str] = {}  # calls of earlier runs answered in this one
            transcript: list[dict[str, Any]] = []  # what this run adds to the conversation
            resumed = ctx.resumed_tool_call(UPDATE_RECIPE)
            if resumed is not None:
                with resumed as call:
                    if call.approved:
                        answered[call.id] = run_tool(call)
                    else:  # the predicted recipe is already undone
                        call.result(REJECTED)
                        answered[call.id] = REJECTED
                if not any(call.id in _call_ids(m) for m in ctx.messages):
                    # A client that sent no history: the model still needs the call it made.
                    transcript += _call_messages(call, answered[call.id])
            for _ in range(MAX_MODEL_TURNS):
                messages = [*conversation(ctx, answered), *transcript]
                turn = await self.model_turn(ctx, api, messages)
                if turn is None:
                    return None  # the model answered in text: done
                if isinstance(turn, Interrupted):
                    return turn
                transcript += turn
        raise AgentError(f"the model was still calling tools after {MAX_MODEL_TURNS} turns")

    async def model_turn(
        self, ctx: RunContext[RecipeState], api: AsyncOpenAI, messages: list[dict[str, Any]]
    ) -> list[dict[str, Any]] | Interrupted | None:
        """Stream one model turn into the run: the chat messages it adds when the model called
        the tool, the pause when that needs confirmation, ``None`` for a text answer."""
        stream = await api.chat.completions.create(
            model=self.model,
            messages=cast(Any, messages),  # plain dicts: the SDK's TypedDicts, unnamed
            tools=cast(Any, [UPDATE_RECIPE_TOOL]),
            parallel_tool_calls=False,
            stream=True,
        )
        message: MessageHandle[RecipeState] | None = None
        call: ToolCallHandle[RecipeState] | None = None
        said: list[str] = []
        try:
            async for chunk in stream:
                if not chunk.choices:
                    continue
                delta = chunk.choices[0].delta
                # Chat models do not write text after a tool call; were one to, it is dropped.
                if delta.content and call is None:
                    if message is None:
                        message = ctx.assistant_message()
                    message.delta(delta.content)
                    said.append(delta.content)
                for piece in delta.tool_calls or ():
                    if call is None:
                        parent = None
                        if message is not None:
                            message.end()  # the call belongs to the same assistant message
                            parent = message.id
                        name = piece.function.name if piece.function else None
                        call = ctx.tool_call(name or "?", parent_message_id=parent)
                    elif piece.index != 0:
                        raise AgentError("the model made parallel tool calls, which were off")
                    if piece.function and piece.function.arguments:
                        call.args(piece.function.arguments)
        finally:
            await stream.close()
        if call is None:
            if message is not None:
                message.end()
            return None
        with call:
            if self.require_confirmation:
                return call.request_confirmation(
                    "Apply this recipe? Approve to keep it, reject to go back."
                )
            content = run_tool(call)
        return _call_messages(call, content, "".join(said) or None)


def _call_ids(message: Message) -> set[str]:
    if isinstance(message, AssistantMessage):
        return {c.id for c in message.tool_calls or ()}
    return set()


def _call_messages(
    call: ToolCallHandle[RecipeState], content: str, said: str | None = None
) -> list[dict[str, Any]]:
    """The assistant message holding ``call`` and the tool message answering it."""
    function = {"name": call.name, "arguments": call.raw_args}
    return [
        {
            "role": "assistant",
            "content": said,
            "tool_calls": [{"id": call.id, "type": "function", "function": function}],
        },
        {"role": "tool", "tool_call_id": call.id, "content": content},
    ]


def run_tool(call: ToolCallHandle[RecipeState]) -> str:
    """Run the called tool on its arguments and report the result (which publishes the final
    state); a call the tool cannot take has its predicted state undone."""
    if call.name != UPDATE_RECIPE:
        content = f"There is no tool called {call.name!r}; use {UPDATE_RECIPE}."
    else:
        try:
            arguments = call.parse_args(UpdateRecipeArgs.model_validate)
        except (ValueError, ValidationError) as error:
            call.discard_prediction()
            content = f"The recipe was not valid, so nothing changed: {error}"
        else:
            content = update_recipe(arguments.recipe)
    call.result(content)
    return content


# -- AG-UI messages -> OpenAI chat messages ---------------------------------------------------


def conversation(ctx: RunContext[RecipeState], results: dict[str, str]) -> list[dict[str, Any]]:
    """The system prompt with the current recipe, then the thread, then this run's results."""
    recipe = ctx.state().recipe
    current = recipe.model_dump_json() if recipe is not None else "none yet"
    system = {"role": "system", "content": f"{INSTRUCTIONS}\nThe current recipe: {current}"}
    return [system, *to_openai(ctx.messages, results)]


def to_openai(messages: Sequence[Message], results: dict[str, str]) -> list[dict[str, Any]]:
    """Every assistant tool call is followed by its answer (from the thread, from ``results``,
    or a note that it was never answered): the chat API refuses a call without one."""
    answers = {m.tool_call_id: m.content for m in messages if isinstance(m, ToolMessage)}
    answers.update(results)
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, (UserMessage, SystemMessage, DeveloperMessage)):
            role = "system" if isinstance(message, DeveloperMessage) else message.role
            out.append({"role": role, "content": _text(message.content)})
        elif isinstance(message, AssistantMessage):
            entry: dict[str, Any] = {"role": "assistant", "content": message.content or None}
            calls = message.tool_calls or []
            if calls:
                entry["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.function.name, "arguments": c.function.arguments},
                    }
                    for c in calls
                ]
            out.append(entry)
            for c in calls:
                content = answers.get(c.id, "The call was never answered.")
                out.append({"role": "tool", "tool_call_id": c.id, "content": content})
    return out


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(getattr(part, "text", "") for part in content)


def create_app() -> Any:
    """The ASGI app, configured from ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` / ``RECIPE_MODEL``
    / ``RECIPE_CONFIRM=1``."""
    return agui_app(
        RecipeAgent(
            base_url=os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1"),
            api_key=os.environ.get("OPENAI_API_KEY", "not-needed-for-a-local-endpoint"),
            model=os.environ.get("RECIPE_MODEL", "gpt-4o-mini"),
            require_confirmation=os.environ.get("RECIPE_CONFIRM") == "1",
        )
    )


__all__ = ["RecipeAgent", "conversation", "create_app", "run_tool", "to_openai"]
