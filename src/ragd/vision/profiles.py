"""The vision engines' prompt profiles: what the multimodal model is asked to do with one image.

A profile is a system prompt (with the documents' language named in it) and a user prompt; the
engines send one image per call with them (:mod:`ragd.vision.client`).

* ``general``: the page as Markdown (headings, paragraphs, lists, tables), nothing added.
* ``diagram``: a diagram page as one Mermaid graph of its boxes and arrows, then a short summary.
* ``ocr``: the words of a scan as they stand, in reading order.
* ``diagram-topology``: only the Mermaid graph, its labels copied from the text the package holds
  (the hybrid engine gives that text beside the image).
* ``figure``: one picture of a text document (a chart, a diagram, a photo): what it shows, its
  labels and numbers; nothing for a picture that says nothing.

Every profile has a :attr:`Profile.version`, a hash of its prompts: the answer cache is keyed by
it, so changing a prompt asks again rather than serving answers to the old one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import get_args

from ragd.settings import VisionProfileName

#: every profile's name, as the settings and the extract probe take it
PROFILE_NAMES: tuple[str, ...] = get_args(VisionProfileName)

_MERMAID_EXAMPLE = (
    "```mermaid\n"
    "flowchart TD\n"
    '  n1["Receive application"] --> n2["Open case"]\n'
    '  n2 -->|Yes| n3["Grant"]\n'
    '  n2 -->|No| n4["Refuse"]\n'
    "```"
)
_MERMAID_RULES = (
    "Mermaid rules: one node per box with a stable id (n1, n2, ...) and its label in double quotes "
    "exactly as written; one edge per arrow, in its direction; a branch's condition as -->|label|; "
    'each swim-lane as subgraph "Lane name" ... end.'
)


@dataclass(frozen=True, slots=True)
class Profile:
    """A named pair of prompts; ``system`` holds ``{language}``."""

    name: str
    system: str
    user: str

    @property
    def version(self) -> str:
        """A hash of the prompts (answers cached under another version are not reused)."""
        return hashlib.sha256(f"{self.system}\x1f{self.user}".encode()).hexdigest()[:16]

    def system_prompt(self, language_hint: str) -> str:
        language = f"{language_hint.strip()}-language" if language_hint.strip() else "the document's own"
        return self.system.format(language=language)


_PROFILES = {
    "general": Profile(
        "general",
        "You are a document transcription engine. You receive one page image of a document written "
        "in {language} language. Transcribe the page faithfully as GitHub-Flavored Markdown: "
        "headings, paragraphs, bullet and numbered lists, and tables as Markdown tables. Keep every "
        "word as written; never translate, summarise or invent. Keep the reading order. Mark text you "
        "cannot read as [unreadable]. Answer with the Markdown only: no preamble, no commentary.",
        "Transcribe this page as Markdown.",
    ),
    "diagram": Profile(
        "diagram",
        "You are a diagram reader. You receive one page image of a document written in {language} "
        "language: a flowchart, process or organisation diagram. Capture its boxes, the arrows "
        "between them and the conditions on the arrows. Keep every label as written; never "
        "translate, summarise or invent steps. Mark text you cannot read as [unreadable]. Answer in "
        "Markdown only: no preamble.",
        "Answer with exactly one fenced Mermaid block of the diagram, like this:\n\n"
        f"{_MERMAID_EXAMPLE}\n\n{_MERMAID_RULES}\n\nThen a short prose summary (at most five "
        "sentences) of what the diagram shows, in the document's language.",
    ),
    "ocr": Profile(
        "ocr",
        "You are an OCR engine. You receive one page image of a scanned document written in "
        "{language} language. Transcribe the visible text exactly, keeping reading order, line "
        "breaks and paragraph breaks. Do not translate, correct, summarise or reformat; add no "
        "headings and no commentary. Mark text you cannot read as [unreadable].",
        "Transcribe the text of this page.",
    ),
    "diagram-topology": Profile(
        "diagram-topology",
        "You are a diagram-topology reader. You receive one page image of a flowchart or process "
        "diagram written in {language} language, and the exact text of its boxes. Your only task is "
        "its structure: the boxes, the lane each belongs to, the arrows between them and the "
        "conditions on them, as one Mermaid flowchart. Copy labels from the given text character for "
        "character; never translate, summarise or invent steps.",
        "Answer with exactly one fenced Mermaid block and nothing else, like this:\n\n"
        f"{_MERMAID_EXAMPLE}\n\n{_MERMAID_RULES}",
    ),
    "figure": Profile(
        "figure",
        "You describe one picture taken from a document written in {language} language; the "
        "document's running text is read separately. Say what the picture shows so that a search "
        "for its content finds it: its title, every label, axis, legend entry and number you can "
        "read, and what it means (a chart's trend, a diagram's steps as a Mermaid block, a table's "
        "rows as a Markdown table). Keep labels as written; never translate or invent. A picture "
        "that carries no information (a logo, a decoration, a blank) gets an empty answer.",
        "Describe this picture.",
    ),
}


def profile(name: str) -> Profile:
    """The profile ``name``; ValueError listing the valid names for any other."""
    found = _PROFILES.get(name.strip().lower())
    if found is None:
        raise ValueError(f"unknown vision profile {name!r}; valid profiles: {', '.join(PROFILE_NAMES)}")
    return found


def grounding_text(native: str) -> str:
    """The text part that gives the model a package's own labels (diagram-topology)."""
    return (
        "The exact text of the diagram's boxes, one per line. Use only these strings as node labels, "
        "copied character for character; a box whose text is not here is [unreadable]. Take the "
        "structure (lanes, arrows, conditions) from the image.\n\n" + native
    )
