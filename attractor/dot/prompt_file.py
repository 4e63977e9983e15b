"""What a graph holds of its prompt files: the text read, or why it could not be.

Values only, so the graph (``graph.py``) and the reader of prompt files
(``prompts.py``) can both name them without importing each other.
"""

from __future__ import annotations

from attractor.dot.source import SourcePos
from attractor.valueclass import frozen


@frozen
class PromptFile:
    """A prompt read from a file: the path as written (after ``@``), its text, and the
    file it was read from (absolute, links resolved; a server checks it is inside its root)."""

    path: str
    text: str
    source: str = ""


@frozen
class PromptFileError:
    """A prompt file that could not be read, with where the ``prompt`` was written."""

    node: str
    path: str
    reason: str
    fix: str
    pos: SourcePos
