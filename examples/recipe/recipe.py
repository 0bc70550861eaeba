"""The recipe domain of seed 003: pydantic models, the state, the tool and its schema."""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, Field

__all__ = [
    "CARBONARA",
    "UPDATE_RECIPE",
    "UPDATE_RECIPE_TOOL",
    "CookingTime",
    "Ingredient",
    "Recipe",
    "RecipeState",
    "SkillLevel",
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


class RecipeState(BaseModel):
    """The shared state (seed 003's state schema: ``{"recipe": object}``)."""

    recipe: Recipe | None = None


class UpdateRecipeArgs(BaseModel):
    """The arguments of ``update_recipe``: the parameter is named like the state key."""

    recipe: Recipe


UPDATE_RECIPE = "update_recipe"


def update_recipe(recipe: Recipe) -> str:
    """The tool: the recipe itself becomes the state (predictive state maps it there)."""
    return "Recipe updated."


UPDATE_RECIPE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": UPDATE_RECIPE,
        "description": (
            "Update the recipe with new or modified content. You MUST write the complete recipe "
            "with ALL fields, even when changing only a few items. NEVER delete existing data - "
            "only add or modify."
        ),
        "parameters": UpdateRecipeArgs.model_json_schema(),
    },
}
"""The OpenAI tool definition the model sees."""


CARBONARA: dict[str, Any] = {
    "title": "Classic Pasta Carbonara",
    "skill_level": "Intermediate",
    "special_preferences": ["Authentic Italian"],
    "cooking_time": "30 min",
    "ingredients": [
        {"icon": "🍝", "name": "Spaghetti", "amount": "400g"},
        {"icon": "🥓", "name": "Guanciale or bacon", "amount": "200g"},
        {"icon": "🥚", "name": "Egg yolks", "amount": "4"},
        {"icon": "🧀", "name": "Pecorino Romano", "amount": "100g grated"},
        {"icon": "🧂", "name": "Black pepper", "amount": "To taste"},
    ],
    "instructions": [
        "Bring a large pot of salted water to boil",
        "Cut guanciale into small strips and fry until crispy",
        "Beat egg yolks with grated Pecorino and black pepper",
        "Cook spaghetti until al dente",
        "Reserve 1 cup pasta water, then drain pasta",
        "Remove pan from heat, add hot pasta to guanciale",
        "Quickly stir in egg mixture, adding pasta water to create creamy sauce",
        "Serve immediately with extra Pecorino and black pepper",
    ],
}
"""Seed 003's final STATE_SNAPSHOT recipe, verbatim."""
