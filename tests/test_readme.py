"""Every fenced code block of README.md and of the documentation's pages runs as written, twice.

The pages are ``README.md`` and every ``docs/**/*.md`` that is not a notebook (the tutorials,
MyST-NB notebooks, are executed by ``make docs`` and ``tests/docs/``); a block that appears on
several pages (a README quickstart is also on its guide page) runs once, under its first page.

* ```python blocks are executed in a temporary directory, twice in the same directory (a second
  run must work too: no "already registered" on a re-run);
* ```bash / ```sh / ```console blocks run with ``bash -e`` and the virtual environment's
  ``dpinfer`` and ``python`` first on PATH, twice, each time in a fresh temporary directory (a
  ledger deliberately refuses a second ``budget init`` of the same data, so a shell block is
  re-run as a new user would run it); the second run runs each plain ``dpinfer ARGS`` line (no
  shell syntax) in this process (``dpinfer.cli.main``, exit status 0 required) and the other
  lines with ``bash -e``: the same commands, without a Python start-up per command;
* lines ``make ...`` are the set-up commands (they create the environment the test runs in) and are
  skipped; ```text blocks (the layout) are not code;
* a block preceded by ``<!-- slow -->`` runs only under ``pytest -m slow``.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from dpinfer.errors import PriorDataConflictWarning

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RUNNABLE = {"python", "bash", "sh", "console"}
# an opening fence: a language (```python) or a MyST directive (```{toctree}, not code), then the block
FENCE = re.compile(r"(<!--\s*slow\s*-->\s*\n)?^```(\{[\w-]+\}|\w*)[^\n]*\n(.*?)^```", flags=re.S | re.M)


def readme_blocks(text: str) -> list[tuple[str, str, bool, int]]:
    """``(language, code, slow, line)`` of every fenced block of ``text``."""
    out = []
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start(2)) + 1
        out.append((m.group(2), m.group(3), bool(m.group(1)), line))
    return out


def shell_script(code: str) -> str:
    """The block without its ``make`` set-up lines and ``$ `` prompts."""
    lines = []
    for ln in code.splitlines():
        stripped = ln.strip()
        if stripped.startswith("$ "):
            ln = stripped[2:]
        if re.match(r"make(\s|$)", ln.strip()):
            continue
        lines.append(ln)
    return "\n".join(lines) + "\n"


def is_notebook(text: str) -> bool:
    """A MyST-NB text notebook (front matter ``file_format: mystnb``), executed by the docs build."""
    return text.startswith("---\n") and "file_format: mystnb" in text.split("\n---", 1)[0]


def pages() -> list[Path]:
    """README.md, then the documentation's Markdown pages that are not notebooks."""
    docs = sorted(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts)
    return [README, *(p for p in docs if not is_notebook(p.read_text()))]


def page_blocks() -> list[tuple[str, str, str, bool, int]]:
    """``(page, language, code, slow, line)`` of every block, each distinct block once."""
    seen: set[tuple[str, str]] = set()
    out = []
    for page in pages():
        for lang, code, slow, line in readme_blocks(page.read_text()):
            if (lang, code) not in seen:
                seen.add((lang, code))
                out.append((page.relative_to(ROOT).as_posix(), lang, code, slow, line))
    return out


BLOCKS = page_blocks()


def _params(slow: bool) -> list:
    return [
        pytest.param(lang, code, id=f"{page}-{lang}-line{line}")
        for page, lang, code, is_slow, line in BLOCKS
        if lang in RUNNABLE and is_slow == slow
    ]


def _run_shell(code: str, cwd: Path) -> None:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.pop("COLUMNS", None)
    proc = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", shell_script(code)],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 0, f"README block failed in {cwd}:\n{code}\n--- stderr:\n{proc.stderr[-3000:]}"
    # issue 39 item 3: the README's problems fit their priors (the conflict check stays quiet)
    assert "prior-data conflict" not in proc.stderr, f"README block warned of a prior-data conflict:\n{code}"


SHELL_SYNTAX = re.compile(r"[|&;<>$`*?(){}\[\]~]")


def script_lines(code: str) -> list[str]:
    """The block's commands, one per logical line (continuations joined, blank lines dropped)."""
    return [ln for ln in shell_script(code).replace("\\\n", " ").splitlines() if ln.strip()]


def in_process_args(line: str) -> list[str] | None:
    """The arguments of a plain ``dpinfer ARGS`` line (a trailing comment allowed), or ``None``
    for a line with any other command or shell syntax outside single quotes."""
    try:
        words = shlex.split(line, comments=True)
        raw = shlex.split(line, comments=True, posix=False)  # the words with their quotes
    except ValueError:
        return None
    if not words or words[0] != "dpinfer" or len(raw) != len(words):
        return None
    for word in raw[1:]:
        if word[0] == word[-1] == "'" and len(word) > 1:
            continue  # single-quoted: literal
        if word[0] == word[-1] == '"' and len(word) > 1 and not re.search(r"[$`\\]", word):
            continue  # double-quoted without expansions
        if SHELL_SYNTAX.search(word):
            return None
    return words[1:]


#: lines that keep no shell state, run one by one with bash beside the in-process commands
STATELESS = re.compile(r"(printf|echo|cp|cat|mkdir|rm|test|ls)\s[^$`&<|;]*$")


def in_process_plan(code: str) -> list[tuple[str, list[str] | None]] | None:
    """``(line, dpinfer arguments or None)`` for each line of a block made of plain ``dpinfer``
    lines and stateless commands; ``None`` (the block runs with bash again) for a block with shell
    state: variables, background jobs, traps, here-documents, ``cd``."""
    plan = []
    for line in script_lines(code):
        args = in_process_args(line)
        if args is None and not STATELESS.match(line.strip()):
            return None
        plan.append((line, args))
    return plan


def _run_shell_in_process(code: str, cwd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dpinfer.cli import main

    plan = in_process_plan(code)
    if plan is None:
        _run_shell(code, cwd)
        return
    monkeypatch.chdir(cwd)
    for line, args in plan:
        if args is None:
            _run_shell(line, cwd)
            continue
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(args)
            except SystemExit as stop:  # argparse: --version, --help, usage errors
                status = stop.code if isinstance(stop.code, int) else 1
        stderr = err.getvalue()
        assert status == 0, f"README command failed in {cwd}:\n{line}\n--- stderr:\n{stderr[-3000:]}"
        assert "prior-data conflict" not in stderr, f"README command warned of a prior-data conflict:\n{line}"


def _run(lang: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if lang == "python":
        monkeypatch.chdir(tmp_path)
        for _ in range(2):  # the same directory: a re-run must work
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                exec(compile(code, str(README), "exec"), {"__name__": "readme"})
            # issue 39 item 3: the README's problems fit their priors (the conflict check stays quiet)
            conflicts = [str(w.message) for w in caught if issubclass(w.category, PriorDataConflictWarning)]
            assert not conflicts, conflicts
        return
    first, second = tmp_path / "run0", tmp_path / "run1"
    first.mkdir()
    second.mkdir()
    _run_shell(code, first)  # as written, by bash
    _run_shell_in_process(code, second, monkeypatch)  # the same commands again, in a fresh folder


def test_readme_has_blocks_of_both_kinds():
    langs = {lang for _, lang, *_ in BLOCKS}
    assert "python" in langs and langs & {"bash", "sh", "console"}
    readme = {lang for lang, *_ in readme_blocks(README.read_text())}
    assert "python" in readme and readme & {"bash", "sh", "console"}
    # every block is either runnable or explicitly marked as not code
    assert all(lang in RUNNABLE | {"text"} or lang.startswith("{") for lang in langs), langs


@pytest.mark.parametrize(("lang", "code"), _params(slow=False))
def test_readme_block_runs_twice(lang, code, tmp_path, monkeypatch):
    _run(lang, code, tmp_path, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize(("lang", "code"), _params(slow=True))
def test_readme_slow_block_runs_twice(lang, code, tmp_path, monkeypatch):
    _run(lang, code, tmp_path, monkeypatch)


def test_pages_are_readme_and_docs_without_notebooks():
    names = [p.relative_to(ROOT).as_posix() for p in pages()]
    assert names[0] == "README.md" and "docs/guide/privacy-core.md" in names
    assert not any(n.startswith("docs/tutorials/") for n in names)  # notebooks: tests/docs/ runs them
    assert is_notebook("---\nfile_format: mystnb\n---\n# t\n") and not is_notebook("# t\n")


def test_extraction_rules():
    text = "a\n<!-- slow -->\n```bash\nmake run\ndpinfer --version\n```\n```text\nlayout\n```\n"
    blocks = readme_blocks(text)
    assert [(b[0], b[2]) for b in blocks] == [("bash", True), ("text", False)]
    assert shell_script(blocks[0][1]) == "dpinfer --version\n"
    # a MyST directive's fence is a block of its own (its closing fence opens nothing)
    text = "```{toctree}\n:maxdepth: 1\n\npage\n```\n\n```python\nx = 1\n```\n"
    assert [b[0] for b in readme_blocks(text)] == ["{toctree}", "python"]


def test_a_failing_block_fails(tmp_path, monkeypatch):
    with pytest.raises(AssertionError):
        _run_shell("dpinfer budget show --ledger missing.db\n", tmp_path)
    with pytest.raises(AssertionError):  # the same command in this process
        _run_shell_in_process("dpinfer budget show --ledger missing.db\n", tmp_path, monkeypatch)
    with pytest.raises(AssertionError):  # a usage error (argparse exits 2)
        _run_shell_in_process("dpinfer --no-such-flag\n", tmp_path, monkeypatch)
    with pytest.raises(AssertionError):  # a failing line that is not a plain dpinfer command
        _run_shell_in_process("dpinfer --version\ntest -e missing.db\n", tmp_path, monkeypatch)


def test_only_plain_dpinfer_lines_run_in_process():
    code = "dpinfer budget show --ledger b.db   # a comment\n$ dpinfer data list\nmake run\n" \
           "dpinfer budget init --ledger b.db --dataset d \\\n    --epsilon 1\n"
    assert [in_process_args(ln) for ln in script_lines(code)] == [
        ["budget", "show", "--ledger", "b.db"], ["data", "list"],
        ["budget", "init", "--ledger", "b.db", "--dataset", "d", "--epsilon", "1"]]
    for line in ["dpinfer data path x > out.txt", "cp \"$(dpinfer data path x)\" data.csv",
                 "dpinfer remote --url $URL me", "dpinfer a | head", "dpinfer serve &", "python -c 'x'",
                 "dpinfer data path *.csv", "dpinfer budget show --ledger ~/b.db"]:
        assert in_process_args(line) is None, line
    assert in_process_plan("printf 'age\\n34\\n' > p.csv\ndpinfer data list\n") == [
        ("printf 'age\\n34\\n' > p.csv", None), ("dpinfer data list", ["data", "list"])]
    for stateful in ["PORT=1\ndpinfer data list\n", "dpinfer serve &\ndpinfer data list\n",
                     "cat > m.py <<'PY'\nx = 1\nPY\ndpinfer data list\n", "export A=1\n", "cd sub\n",
                     'cp "$(dpinfer data path x.csv)" d.csv\n']:
        assert in_process_plan(stateful) is None, stateful
    json_arg = "dpinfer check --model-args '{\"n\": 100}'"
    assert in_process_args(json_arg) == ["check", "--model-args", '{"n": 100}']
    assert in_process_args('dpinfer data path "$NAME"') is None
