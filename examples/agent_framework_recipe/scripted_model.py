"""The model the recipe cassettes were recorded from: a script that answers like one.

Imports nothing from Agent Framework, so ``conftest.py`` loads it in any venv.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from agui_replay.providers import ProviderRequest, ToolCallDelta, by_size, by_word

__all__ = ["ASK_AGAIN", "CARBONARA", "REPLY", "scripted_model"]

CARBONARA = {
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
"""What the scripted model writes when asked for a carbonara (seed 003's example state)."""

REPLY = "Here's your recipe! Classic carbonara: no cream, just eggs, Pecorino and guanciale."
ASK_AGAIN = "Which dish would you like a recipe for?"


def scripted_model(request: ProviderRequest) -> Iterator[str | ToolCallDelta]:
    """A stand-in for the model that answers from the conversation it is sent.

    Asked for a carbonara (the last message is the user's), it calls ``update_recipe`` with
    the whole recipe, the arguments streamed in 24-character fragments; once the tool has
    answered (the last message is the tool's), it replies in a sentence, word by word.
    Anything else gets a question back. The call id is left to the provider, which draws a
    random ``call_...`` id each time, as OpenAI does.
    """
    last = request.messages[-1]
    if last["role"] == "tool":
        yield from by_word(REPLY)
        return
    if last["role"] == "user" and "carbonara" in str(last.get("content", "")).lower():
        arguments = json.dumps({"recipe": CARBONARA}, ensure_ascii=False)
        for n, fragment in enumerate(by_size(arguments, 24)):
            yield ToolCallDelta(fragment, name="update_recipe" if n == 0 else None)
        return
    yield from by_word(ASK_AGAIN)
