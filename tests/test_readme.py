"""The README's examples: the commands it gives, and the Python snippet printing what its comments say."""

import ast
import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
FENCE = re.compile(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?\binf\b|\bnan\b")


def code_blocks():
    """(language, source) of every fenced block in the README, in order."""
    return FENCE.findall(README.read_text(encoding="utf-8"))


def first_python_block() -> str:
    block = next((src for lang, src in code_blocks() if lang == "python"), None)
    assert block is not None, "README.md has no ```python block"
    return block


def comment_of(line: str):
    """The hand-written comment at the end of a source line (None when there is none)."""
    tokens = line.split("#", 1)
    return tokens[1].strip() if len(tokens) == 2 else None


def expected_lines(comment: str, in_loop: bool) -> list:
    """What the comment says the line prints: the text after '->' when present, else the whole comment;
    a print inside a loop lists one printed value per iteration, separated by commas."""
    text = comment.split("->", 1)[1].strip() if "->" in comment else comment
    return [part.strip() for part in text.split(",")] if in_loop else [text]


def squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


def same_printout(printed: str, expected: str) -> bool:
    """Equal up to spacing, with the numbers in them equal as numbers (3.5 and 3.5000 agree)."""
    numbers_p, numbers_e = NUMBER.findall(printed), NUMBER.findall(expected)
    if len(numbers_p) != len(numbers_e):
        return False
    if any(float(p) != float(e) for p, e in zip(numbers_p, numbers_e)):
        return False
    return squeeze(NUMBER.sub("#", printed)) == squeeze(NUMBER.sub("#", expected))


def run_statements(source: str):
    """Execute the snippet one top-level statement at a time; yield (statement, its stdout lines, namespace)."""
    namespace = {"__name__": "__readme__"}
    tree = ast.parse(source)
    for statement in tree.body:
        code = compile(ast.Module(body=[statement], type_ignores=[]), str(README), "exec")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(code, namespace)
        yield statement, out.getvalue().splitlines(), namespace


def print_lines(statement):
    """(line number, in a loop?) of every print(...) call inside a top-level statement."""
    in_loop = isinstance(statement, (ast.For, ast.While))
    return [(node.lineno, in_loop) for node in ast.walk(statement)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"]


def test_first_code_block_has_the_two_commands():
    _, block = code_blocks()[0]
    commands = [line.strip() for line in block.splitlines() if line.strip() and not line.strip().startswith("#")]
    assert len(commands) == 2, f"expected exactly two commands in the README's first code block, got {commands}"
    assert sum("jupyter lab" in c for c in commands) == 1, commands
    assert sum("pytest" in c for c in commands) == 1, commands
    assert not any("jupyter lab" in c and "pytest" in c for c in commands), commands


def test_python_snippet_prints_what_its_comments_say():
    source = first_python_block()
    lines = source.splitlines()
    checked = 0
    for statement, printed, _ in run_statements(source):
        prints = print_lines(statement)
        if not prints:
            assert printed == [], f"line {statement.lineno} printed {printed} without a print call"
            continue
        assert len(prints) == 1, "one print per statement keeps the comments unambiguous"
        lineno, in_loop = prints[0]
        comment = comment_of(lines[lineno - 1])
        assert comment, f"README line {lines[lineno - 1]!r} prints without saying what in a comment"
        expected = expected_lines(comment, in_loop)
        source_line = lines[lineno - 1].strip()
        assert len(printed) == len(expected), f"{source_line!r} printed {printed}, comment says {expected}"
        for got, want in zip(printed, expected):
            assert same_printout(got, want), f"{source_line!r} printed {got!r}, comment says {want!r}"
        checked += 1
    assert checked >= 3, "the snippet should show x.grad, w.grad and the backward steps"


def test_the_snippet_has_both_kinds_of_claim():
    """Printed values after '->' and a backward_steps loop listing node names: the test above checks both."""
    source = first_python_block()
    assert "->" in source
    loop = next((s for s in ast.parse(source).body if isinstance(s, ast.For)), None)
    assert loop is not None and "backward_steps" in ast.unparse(loop.iter)
    names = expected_lines(comment_of(source.splitlines()[loop.body[0].lineno - 1]), in_loop=True)
    assert len(names) > 1 and all(re.fullmatch(r"\w+Backward\w*|AccumulateGrad", n) for n in names), names


def test_loss_value_in_the_comment():
    """The hand-worked loss value in the snippet's comment ('... = 12.25') is the loss it computes."""
    source = first_python_block()
    line = next(line for line in source.splitlines() if line.startswith("loss ="))
    claimed = float(comment_of(line).rsplit("=", 1)[1])
    namespace = {}
    for _, _, namespace in run_statements(source):
        pass
    assert namespace["loss"].item() == pytest.approx(claimed)


@pytest.mark.parametrize("printed, expected, same", [
    ("tensor([ 3.5000, -7.0000, 14.0000])", "tensor([3.5, -7, 14])", True),
    ("tensor([ 7., 14., 21.])", "tensor([ 7., 14., 22.])", False),
    ("tensor([1., 2.])", "tensor([1., 2., 3.])", False),
    ("SumBackward", "SumBackward", True),
    ("SumBackward", "MulBackward", False),
])
def test_the_comparison_itself_can_fail(printed, expected, same):
    assert same_printout(printed, expected) is same
