"""What search_file matches with: a substring, or an RE2 regular expression.

Python's ``re`` backtracks: ``(a+)+$`` against forty ``a`` and a ``!`` takes
longer than any run, and the worker thread cannot be stopped. RE2 (Google's
engine, package ``google-re2``) matches in time linear in the line, and its
binding releases the GIL while it matches. The price is that RE2 has no
backreferences or lookaround; such a pattern gets an error that says so.
"""

from __future__ import annotations

from collections.abc import Callable

import re2

from attractor.errors import ToolError

Matcher = Callable[[bytes], bool]

# RE2's error text (with what follows it cut off) -> the feature the pattern used.
_UNSUPPORTED = {
    "invalid perl operator: (?=": "lookahead (?=...)",
    "invalid perl operator: (?!": "negative lookahead (?!...)",
    "invalid perl operator: (?<=": "lookbehind (?<=...)",
    "invalid perl operator: (?<!": "negative lookbehind (?<!...)",
    "invalid perl operator: (?>": "an atomic group (?>...)",
    "invalid perl operator: (?P=": "a named backreference (?P=name)",
    "invalid perl operator: (?#": "a comment group (?#...)",
    "invalid perl operator: (?x": "the verbose flag (?x)",
    "invalid escape sequence: \\Z": "\\Z (write \\z for the end of the line)",
}


def matcher(pattern: str, *, regex: bool, ignore_case: bool) -> Matcher:
    """A test for one line's bytes (UTF-8).

    Raises:
        ToolError: the pattern is empty, invalid, or uses what RE2 does not support.
    """
    if not pattern:
        raise ToolError("pattern must not be empty")
    if not regex and not ignore_case:
        needle = pattern.encode("utf-8", errors="surrogateescape")
        return lambda line: needle in line
    options = re2.Options()
    options.log_errors = False  # RE2 would print every bad pattern to stderr
    options.case_sensitive = not ignore_case
    options.literal = not regex
    try:
        compiled = re2.compile(pattern, options)
    except re2.error as error:
        raise _explain(pattern, error) from None
    search = compiled.search
    return lambda line: search(line) is not None


def _explain(pattern: str, error: Exception) -> ToolError:
    raw = error.args[0] if error.args else ""
    message = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    feature = _unsupported(message, pattern)
    if feature is None:
        return ToolError(f"invalid regular expression {pattern!r}: {message}")
    return ToolError(
        f"regular expression {pattern!r} uses {feature}, which is not supported: search_file "
        "matches with RE2, in linear time, without backreferences or lookaround; rewrite "
        "the pattern without it (for example match a wider pattern and read the lines found)"
    )


def _unsupported(message: str, pattern: str) -> str | None:
    if message.startswith("invalid perl operator: (?P") and "(?P=" in pattern:
        return _UNSUPPORTED["invalid perl operator: (?P="]
    if message.startswith("invalid escape sequence: \\") and message[-1:].isdigit():
        return f"a backreference ({message.rsplit(' ', 1)[-1]})"
    if message.startswith("bad repetition operator: ") and message.endswith("+"):
        return f"a possessive quantifier ({message.rsplit(' ', 1)[-1]})"
    for prefix, feature in _UNSUPPORTED.items():
        if message.startswith(prefix):
            return feature
    return None
