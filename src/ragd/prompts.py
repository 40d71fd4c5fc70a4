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

RAG_SYSTEM = """## Retrieved Documentation
Answer the user's latest message from the numbered documents below. After each statement that uses \
a document, cite it by its number in square brackets, e.g. [1] or [2][3]; cite only the numbers \
given here. If the documents do not hold the answer, say so and answer only what they support.\
{tool_hint}

<retrieved_documents>
{context}
</retrieved_documents>
"""

#: ragproxy's style (RAGD_CHAT__PROMPT_STYLE=sources-list): the same instructions, the sources as a
#: numbered list, each its title and URL (or path), then its text
RAG_SOURCES_LIST = """## Sources
Answer the user's latest message from the numbered sources below. After each statement that uses \
a source, cite it by its number in square brackets, e.g. [1] or [2][3]; cite only the numbers \
given here. If the sources do not hold the answer, say so and answer only what they support.\
{tool_hint}

{context}
"""

NO_RELEVANT_DOCUMENTS = """## Retrieved Documentation
A search of the user's documents found nothing relevant to the latest message. Tell the user that \
their documents do not cover it; answer from general knowledge only if they ask for that, and then \
say that the answer does not come from their documents. Cite no document numbers.
"""

RAG_TOOL_HINT = """
When a snippet is not enough, call read_full_document with a document's path (or file id) to read \
all of it, or search_documents with a new query; cite what they return by its [n] as well."""

READ_FULL_DOCUMENT = """Read the full content of a document by its path.

Use this tool when the context snippet is insufficient and you need the complete document to \
answer the user's question accurately. The file_path should be one of the path (or file_id) \
values of the documents in the context."""

SEARCH_DOCUMENTS = """Search the indexed documents again with a new query.

Use this tool when the documents in the context do not cover the question. Results are numbered \
after the ones you already have; cite them by their number."""

AGENT_QUERIES = """### Task
Call search_documents with 1 to {max_queries} short search queries that would find the information \
needed to answer the user's latest message. Use the chat history to resolve references.
Today's date is {current_date}.

### Guidelines
- Each query must stand alone: no "it", "that" or "the above".
- Prefer the user's own key terms and language.
- Write a second query only for a second part of the question or a different wording worth trying.
"""

AGENT_GRADE = """### Task
Grade search results for the question. Each result is a numbered preview: the start of a longer text.
Call grade once with:
- relevant: the numbers of the results that help answer the question;
- verdict: "accept" when the relevant results are enough to answer, "retry" when the results are \
off-topic or miss a part of the question;
- queries: with "retry" only, 1 to {max_queries} new queries: rewrite a query that found nothing \
useful, or split a question with several parts into one query per part.
Retry only for off-topic or missing results, never to find more of the same.
"""

AGENT_SEARCH_TOOL = "Search the indexed documents with one or more standalone queries."

AGENT_GRADE_TOOL = "Grade the numbered search results and say whether to accept them or search again."

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
