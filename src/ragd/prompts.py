"""Every prompt ragd sends to a model, in one place.

Templates use ``{name}`` placeholders filled by :func:`fill`; ``{{`` and ``}}``
are literal braces (the convention of the retrieval-agent's templates).
"""

from __future__ import annotations

import re

QUERY_GENERATION = """### Task
Write 1 to {max_queries} short search queries that would find the information needed to answer \
the user's latest message, using the chat history for context (resolve pronouns and references).
Today's date is {current_date}.

### Guidelines
- Each query must stand alone: no "it", "that" or "the above".
- Prefer the user's own key terms and language; add a rephrasing only if it finds something new.
- If the latest message needs no search (a greeting, a thank-you), return an empty list.
- Answer with JSON only: {{"queries": ["first query", "second query"]}}

### Chat history
{chat_history}
"""

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([a-z_]+)\}")


def fill(template: str, **values: object) -> str:
    """Fill ``{name}`` placeholders that are in ``values``; leave unknown ones as written.

    A user-supplied template with stray braces never raises (unlike ``str.format``).
    """

    def sub(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        name = match.group(1)
        return str(values[name]) if name in values else token

    return _PLACEHOLDER.sub(sub, template)
