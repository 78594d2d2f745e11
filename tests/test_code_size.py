"""The house's size rules, held by a test so they cannot come back: no function over 80
lines and no file over 500, in the Python of src/linklab and in the native code -- the C++
of probes/ and ns3/ and the Rust of emu/ (generated files such as
probes/common/message_types.inc are neither C++ nor Rust sources, so not read).

Python functions are measured by ``ast`` (from ``def`` to their last line, decorators not
counted); native ones by tests/native_functions.py, which matches braces after blanking
comments and literals (so a Rust ``format!("{{")`` or a brace in a comment does not count)."""

from __future__ import annotations

import ast
from pathlib import Path

from native_functions import NATIVE_SUFFIXES, functions

REPO = Path(__file__).resolve().parents[1]
NATIVE_DIRS = ("probes", "ns3", "emu")
MAX_FUNCTION_LINES = 80
MAX_FILE_LINES = 500


def native_sources() -> list[Path]:
    """Every C++ and Rust source in probes/, ns3/ and emu/ (a cargo target/ excepted)."""
    return sorted(path for top in NATIVE_DIRS for path in (REPO / top).rglob("*")
                  if path.suffix in NATIVE_SUFFIXES and path.is_file()
                  and "target" not in path.relative_to(REPO).parts)


def python_sources() -> list[Path]:
    return sorted((REPO / "src" / "linklab").rglob("*.py"))


def python_functions(path: Path) -> list[tuple[str, int, int]]:
    """(name, first line, lines) of every function and method in one module."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [(node.name, node.lineno, node.end_lineno - node.lineno + 1)
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def too_long_files(paths: list[Path]) -> list[str]:
    return sorted(f"{path.relative_to(REPO)}: {n} lines" for path in paths
                  if (n := len(path.read_text().splitlines())) > MAX_FILE_LINES)


def test_the_native_scan_sees_the_native_code():
    """A scan that found nothing would pass the length test: it finds every Rust fn and
    the probes' known entry points."""
    found = {(Path(f.path).relative_to(REPO).as_posix(), f.name)
             for path in native_sources() for f in functions(path)}
    assert len(found) > 300
    for expected in [("emu/src/main.rs", "main"), ("emu/src/config.rs", "parse"),
                     ("probes/common/options.cpp", "parse_options"),
                     ("probes/common/publish.cpp", "run_pub"),
                     ("probes/checks/check_fastdds_profile.cpp", "main"),
                     ("ns3/linklab-ns3.cc", "main")]:
        assert expected in found


def test_no_native_function_is_over_80_lines():
    long = sorted(f"{Path(f.path).relative_to(REPO)}:{f.first_line} {f.name}: {f.lines} lines"
                  for path in native_sources() for f in functions(path)
                  if f.lines > MAX_FUNCTION_LINES)
    assert long == [], "\n".join(long)


def test_no_native_file_is_over_500_lines():
    assert too_long_files(native_sources()) == []


def test_no_python_function_is_over_80_lines():
    long = sorted(f"{path.relative_to(REPO)}:{first} {name}: {lines} lines"
                  for path in python_sources()
                  for name, first, lines in python_functions(path)
                  if lines > MAX_FUNCTION_LINES)
    assert long == [], "\n".join(long)


def test_no_python_module_is_over_500_lines():
    assert too_long_files(python_sources()) == []


def test_braces_in_literals_and_comments_do_not_count():
    rust = '''fn a() {
    let s = format!("{{\\"x\\":{}}}", 1); // }
    let c = '{'; let l: &'static str = r#"}"#;
    /* } /* nested } */ } */
}
fn b<'a>(x: &'a str) -> &'a str { x }
'''
    assert [(f.name, f.first_line, f.lines) for f in functions(Path("x.rs"), rust)] == [
        ("a", 1, 5), ("b", 6, 1)]
    cpp = '''#include <x>
#define OPEN {
namespace n {
struct S { int f() const { return '}'; } };
static const int table[] = {1, 2};
int
main(int argc, char** argv)
{
    auto l = [](int x) { if (x) { return "}"; } return R"(})"; };
    return 0;
}
}
'''
    assert [(f.name, f.first_line, f.lines) for f in functions(Path("x.cpp"), cpp)] == [
        ("f", 4, 1), ("main", 6, 6)]
