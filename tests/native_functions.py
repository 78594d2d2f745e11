"""The functions of linklab's native code (C++ in probes/ and ns3/, Rust in emu/) and how
many lines each spans, for tests/test_code_size.py.

Not a parser: comments, string and character literals (and C++ preprocessor lines) are
blanked first, newlines kept, then braces are matched. A brace block is a function when
its header -- the text since the last ``;``, ``{`` or ``}`` -- looks like a signature
(C++: a parenthesised parameter list that does not follow ``if``, ``for``, ``while``,
``switch``, ``catch`` or ``return``; Rust: ``fn name``) and no function encloses it, so
lambdas and closures count as lines of the function around them. A function's length is
the lines from its header's first line to its closing brace, both included."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from pathlib import Path

NATIVE_SUFFIXES = (".cpp", ".hpp", ".cc", ".h", ".rs")

_LITERALS = {
    # C++: raw strings R"delim(...)delim", strings, character literals
    False: (r'R"(?P<d>[^(\s]*)\(.*?\)(?P=d)"', r'"(?:\\.|[^"\\\n])*"', r"'(?:\\.|[^'\\\n])+'"),
    # Rust: raw strings r#"..."#, (byte) strings, (byte) chars -- not lifetimes ('a)
    True: (r'b?r(?P<h>#*)".*?"(?P=h)', r'b?"(?:\\.|[^"\\])*"',
           r"b?'(?:\\u\{[0-9a-fA-F]+\}|\\x[0-9a-fA-F]{2}|\\.|[^'\\\n])'"),
}
_PREPROCESSOR = re.compile(r"^[ \t]*#[^\n]*(?:\\\n[^\n]*)*", re.M)
_CPP_NOT_SIGNATURE = re.compile(
    r"^(?:if|for|while|switch|catch|do|else|try|return|namespace|class|struct|enum|union"
    r"|extern)\b")
_CPP_NAME = re.compile(r"(operator\s*\S+?|[~\w:]+)\s*\(")
_RUST_NAME = re.compile(r"\bfn\s+(\w+)")


@dataclass(frozen=True)
class Function:
    path: str
    name: str
    first_line: int
    lines: int


def _blank(text: str) -> str:
    """The text as spaces, its newlines kept (so line numbers stay true)."""
    return re.sub(r"[^\n]", " ", text)


def _block_comment_end(text: str, start: int, nested: bool) -> int:
    """Where the block comment opening at start ends (Rust's nest, C++'s do not)."""
    depth, i = 0, start
    while i < len(text):
        pair = text[i:i + 2]
        if pair == "/*" and (nested or depth == 0):
            depth, i = depth + 1, i + 2
        elif pair == "*/":
            depth, i = depth - 1, i + 2
            if depth == 0:
                return i
        else:
            i += 1
    return len(text)


def code_only(text: str, rust: bool) -> str:
    """The source with comments, literals and (C++) preprocessor lines blanked.

    One scan from left to right: whichever of a comment or a literal starts first is
    consumed whole, so a quote inside a comment or ``//`` inside a string is harmless."""
    raw, string, char = _LITERALS[rust]
    start = re.compile(r"/\*|//[^\n]*|" + "|".join(f"(?:{p})" for p in (raw, string, char)),
                       re.S)
    out: list[str] = []
    i = 0
    while (match := start.search(text, i)) is not None:
        out.append(text[i:match.start()])
        end = (_block_comment_end(text, match.start(), nested=rust)
               if match.group(0) == "/*" else match.end())
        out.append(_blank(text[match.start():end]))
        i = end
    out.append(text[i:])
    code = "".join(out)
    return code if rust else _PREPROCESSOR.sub(lambda m: _blank(m.group(0)), code)


def signature_name(header: str, rust: bool) -> str | None:
    """The function's name when the header opens a function body, else None."""
    header = " ".join(header.split())
    if rust:
        match = _RUST_NAME.search(header)
        return match.group(1) if match else None
    if "(" not in header or _CPP_NOT_SIGNATURE.match(header):
        return None
    if header.endswith(("=", ",", "(", "return")):  # a braced initialiser, not a body
        return None
    return _cpp_name(header)


def _cpp_name(header: str) -> str:
    """The name before the signature's parameter list: the first ``(`` outside template
    brackets (``std::function<int()> make(...)`` is ``make``)."""
    angle = 0
    for index, ch in enumerate(header):
        angle += {"<": 1, ">": -1}.get(ch, 0)
        if ch == "(" and angle <= 0:
            names = _CPP_NAME.findall(header[:index + 1])
            return names[-1] if names else "?"
    return "?"


def functions(path: Path, text: str | None = None) -> list[Function]:
    """Every outermost function in one native source file, with its line span."""
    text = path.read_text() if text is None else text
    rust = path.suffix == ".rs"
    code = code_only(text, rust)
    line_starts = [0] + [m.end() for m in re.finditer("\n", code)]

    def line_of(offset: int) -> int:
        return bisect.bisect_right(line_starts, offset)

    found: list[Function] = []
    stack: list[tuple[str | None, int]] = []  # per open brace: function name (or None), line
    header_start = 0
    for index, ch in enumerate(code):
        if ch not in ";{}":
            continue
        if ch == "{":
            header = code[header_start:index]
            inside = any(name is not None for name, _ in stack)
            name = None if inside else signature_name(header, rust)
            first = header_start + len(header) - len(header.lstrip())
            stack.append((name, line_of(first)))
        elif ch == "}" and stack:
            name, first_line = stack.pop()
            if name is not None:
                found.append(Function(str(path), name, first_line,
                                      line_of(index) - first_line + 1))
        header_start = index + 1
    return found
