"""Seed 003's recipe agent on Microsoft Agent Framework, served by agent-framework-ag-ui.

An Agent Framework ``Agent`` with one tool, ``update_recipe``, wrapped in an
``AgentFrameworkAgent`` that shares the recipe with the client as state:

* ``state_schema`` declares the state key ``recipe``;
* ``predict_state_config`` maps that key to the ``recipe`` argument of ``update_recipe``, so the
  recipe streams into the client's state (``STATE_DELTA`` events) while the model is still
  writing the tool call;
* ``require_confirmation=True`` pauses the run before the tool executes: the framework asks the
  client to approve the predicted change, and the next run carries the answer.

The model is reached through Agent Framework's ``OpenAIChatCompletionClient`` at any
OpenAI-compatible base URL. :func:`create_app` is the FastAPI app (``POST /`` with a
``RunAgentInput``, an SSE event stream back). Serve it against OpenAI::

    OPENAI_API_KEY=sk-... uvicorn --factory examples.agent_framework_recipe.agent:app_from_env

agent-framework-ag-ui pins ``ag-ui-protocol<0.2``, so this example lives in its own venv
(``.venv-af``, built by ``.ci/run``).
"""

from __future__ import annotations

import os
from enum import Enum

from agent_framework import Agent, tool
from agent_framework.openai import OpenAIChatCompletionClient
from agent_framework_ag_ui import AgentFrameworkAgent, add_agent_framework_fastapi_endpoint
from fastapi import FastAPI
from pydantic import BaseModel, Field

__all__ = [
    "INSTRUCTIONS",
    "PREDICT_STATE_CONFIG",
    "STATE_SCHEMA",
    "CookingTime",
    "Ingredient",
    "Recipe",
    "SkillLevel",
    "app_from_env",
    "build_agent",
    "create_app",
    "update_recipe",
]


class SkillLevel(str, Enum):
    """The skill level required for the recipe."""

    BEGINNER = "Beginner"
    INTERMEDIATE = "Intermediate"
    ADVANCED = "Advanced"


class CookingTime(str, Enum):
    """The cooking time of the recipe."""

    FIVE_MIN = "5 min"
    FIFTEEN_MIN = "15 min"
    THIRTY_MIN = "30 min"
    FORTY_FIVE_MIN = "45 min"
    SIXTY_PLUS_MIN = "60+ min"


class Ingredient(BaseModel):
    """An ingredient with its details."""

    icon: str = Field(..., description="Emoji icon representing the ingredient (e.g., 🥕)")
    name: str = Field(..., description="Name of the ingredient")
    amount: str = Field(..., description="Amount or quantity of the ingredient")


class Recipe(BaseModel):
    """A complete recipe."""

    title: str = Field(..., description="The title of the recipe")
    skill_level: SkillLevel = Field(..., description="The skill level required")
    special_preferences: list[str] = Field(
        default_factory=list, description="Dietary preferences (e.g., Vegetarian, Gluten-free)"
    )
    cooking_time: CookingTime = Field(..., description="The estimated cooking time")
    ingredients: list[Ingredient] = Field(..., description="Complete list of ingredients")
    instructions: list[str] = Field(..., description="Step-by-step cooking instructions")


def update_recipe(recipe: Recipe) -> str:
    """Update the recipe with new or modified content.

    You MUST write the complete recipe with ALL fields, even when changing only a few items.
    When modifying an existing recipe, include ALL existing ingredients and instructions plus
    your changes. NEVER delete existing data - only add or modify.

    Args:
        recipe: The complete recipe object with all details

    Returns:
        Confirmation that the recipe was updated
    """
    return "Recipe updated."


INSTRUCTIONS = """You are a helpful recipe assistant that creates and modifies recipes.

CRITICAL RULES:
1. You will receive the current recipe state in the system context
2. To update the recipe, you MUST use the update_recipe tool
3. When modifying a recipe, ALWAYS include ALL existing data plus your changes in the tool call
4. NEVER delete existing ingredients or instructions - only add or modify
5. After calling the tool, provide a brief conversational message (1-2 sentences)

When creating a NEW recipe:
- Provide all required fields: title, skill_level, cooking_time, ingredients, instructions
- Use actual emojis for ingredient icons (🥕 🧄 🧅 🍅 🌿 🍗 🥩 🧀)
- Leave special_preferences empty unless specified
- Message: "Here's your recipe!" or similar
"""

STATE_SCHEMA = {"recipe": {"type": "object", "description": "The current recipe"}}
"""The shared state: one key, ``recipe`` (its structure is :class:`Recipe`)."""

PREDICT_STATE_CONFIG = {"recipe": {"tool": "update_recipe", "tool_argument": "recipe"}}
"""State key ``recipe`` follows the ``recipe`` argument of ``update_recipe`` as it streams."""


def build_agent(
    *, base_url: str, api_key: str, model: str = "gpt-4o-mini", require_confirmation: bool = True
) -> AgentFrameworkAgent:
    """The recipe agent, its model called at ``base_url`` (any OpenAI-compatible server)."""
    # require_confirmation asks the client before a tool that needs approval runs; the tool
    # itself says that it does (a tool without approval_mode runs at once, unconfirmed).
    approval = "always_require" if require_confirmation else "never_require"
    agent = Agent(
        name="recipe_agent",
        instructions=INSTRUCTIONS,
        client=OpenAIChatCompletionClient(model, base_url=base_url, api_key=api_key),
        tools=[tool(update_recipe, approval_mode=approval)],
    )
    return AgentFrameworkAgent(
        agent=agent,
        name="RecipeAgent",
        description="Creates and modifies recipes with streaming state updates",
        state_schema=STATE_SCHEMA,
        predict_state_config=PREDICT_STATE_CONFIG,
        require_confirmation=require_confirmation,
    )


def create_app(
    *, base_url: str, api_key: str, model: str = "gpt-4o-mini", require_confirmation: bool = True
) -> FastAPI:
    """The agent behind ``POST /``.

    The endpoint serves one user (``single_user=True``): agent-framework-ag-ui requires an
    explicit authorization mode, and the approval it waits for is kept per scope in memory, so
    the run that answers an approval must reach the same app as the run that asked.
    """
    app = FastAPI(title="AG-UI Recipe Assistant")
    recipe_agent = build_agent(
        base_url=base_url,
        api_key=api_key,
        model=model,
        require_confirmation=require_confirmation,
    )
    add_agent_framework_fastapi_endpoint(app, recipe_agent, "/", single_user=True)
    return app


def app_from_env() -> FastAPI:
    """For ``uvicorn --factory``: ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``RECIPE_MODEL``."""
    return create_app(
        base_url=os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"),
        api_key=os.environ["OPENAI_API_KEY"],
        model=os.environ.get("RECIPE_MODEL", "gpt-4o-mini"),
    )
