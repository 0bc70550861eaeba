"""A unit-converting assistant on LangGraph, spoken over AG-UI by ag-ui-langgraph.

The graph is the one LangGraph's tutorials build: a ``chat`` node that calls the model
(LangChain's ``ChatOpenAI``, streaming, at any OpenAI-compatible base URL) with one tool bound,
``convert``, run by a prebuilt ``ToolNode``; the chat node runs again after the tool answered,
until the model replies in text. A ``MemorySaver`` checkpointer keeps each thread's
conversation between runs, as a LangGraph server would.

ag-ui-langgraph serves it with its default configuration (``LangGraphAgent`` +
``add_langgraph_fastapi_endpoint``): every LangChain callback event is re-emitted as a ``RAW``
event, and the state (with its LangChain messages) as ``STATE_SNAPSHOT``. All of those carry
ids that LangChain and LangGraph mint at random (``lc_run--<uuid7>`` message ids, run ids,
checkpoint ids) and the provider's ``chatcmpl-``/``call_`` ids.

:func:`create_app` is the ASGI app: ``POST /agent`` with a ``RunAgentInput``, an SSE event stream
back. Serve it against OpenAI::

    OPENAI_API_KEY=sk-... uvicorn --factory examples.langgraph_agent.agent:app_from_env
"""

from __future__ import annotations

import os

from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
from fastapi import FastAPI
from langchain_core.messages import SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition

__all__ = ["FACTORS", "INSTRUCTIONS", "app_from_env", "build_graph", "convert", "create_app"]

INSTRUCTIONS = (
    "You convert between units. Use the convert tool for every conversion, never do the "
    "arithmetic yourself, then answer in one short sentence."
)

FACTORS: dict[tuple[str, str], float] = {
    ("km", "mi"): 0.621371,
    ("mi", "km"): 1.609344,
    ("kg", "lb"): 2.204623,
    ("lb", "kg"): 0.453592,
    ("m", "ft"): 3.280840,
    ("ft", "m"): 0.304800,
}
"""What ``convert`` knows: the factor from one unit to the other (temperatures are formulas)."""


@tool
def convert(value: float, from_unit: str, to_unit: str) -> str:
    """Convert a value between units: km, mi, kg, lb, m, ft, C and F."""
    source, target = from_unit.strip(), to_unit.strip()
    if (source, target) == ("C", "F"):
        result = value * 9 / 5 + 32
    elif (source, target) == ("F", "C"):
        result = (value - 32) * 5 / 9
    elif (source.lower(), target.lower()) in FACTORS:
        result = value * FACTORS[source.lower(), target.lower()]
    else:
        return f"cannot convert {source} to {target}"
    return f"{value:g} {source} = {result:.2f} {target}"


def build_graph(model: ChatOpenAI) -> CompiledStateGraph:
    """chat -> (tools -> chat)* -> end, with a fresh in-memory checkpointer."""
    tools = [convert]
    chat_model = model.bind_tools(tools)

    async def chat(state: MessagesState, config: RunnableConfig) -> dict[str, list]:
        # The config carries LangGraph's callbacks: the model's stream reaches ag-ui-langgraph.
        answer = await chat_model.ainvoke(
            [SystemMessage(INSTRUCTIONS), *state["messages"]], config
        )
        return {"messages": [answer]}

    graph = StateGraph(MessagesState)
    graph.add_node("chat", chat)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "chat")
    graph.add_conditional_edges("chat", tools_condition)
    graph.add_edge("tools", "chat")
    return graph.compile(checkpointer=MemorySaver())


def create_app(
    base_url: str, *, api_key: str | None = None, model: str = "gpt-4o-mini"
) -> FastAPI:
    """The agent behind ``POST /agent``, its model at ``base_url`` (an OpenAI-compatible API)."""
    chat_model = ChatOpenAI(
        model=model,
        streaming=True,
        base_url=base_url,
        api_key=api_key or os.environ.get("OPENAI_API_KEY", "sk-none"),
        max_retries=0,
    )
    app = FastAPI()
    agent = LangGraphAgent(name="converter", graph=build_graph(chat_model))
    add_langgraph_fastapi_endpoint(app, agent, "/agent")
    return app


def app_from_env() -> FastAPI:
    """For ``uvicorn --factory``: ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``CONVERTER_MODEL``."""
    return create_app(
        os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"),
        model=os.environ.get("CONVERTER_MODEL", "gpt-4o-mini"),
    )
