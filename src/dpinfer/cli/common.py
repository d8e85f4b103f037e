"""What the ``dpinfer`` commands share: option blocks, the ledger decision, notices, errors.

Commands that release a private result from confidential data (``dpvi``, ``abcdp``) need either
``--ledger PATH`` (the release is charged to a registered budget first) or an explicit
``--no-ledger`` (released unaccounted, with a one-line notice); :func:`add_ledger_options` and
:func:`open_release_ledger` implement that for every such command, and bind the charge to the
fingerprint of the data file's records (:mod:`dpinfer.cli.data_input`: records bound to one budget
cannot be charged to another). Every command exits with the statuses of :data:`EXIT_STATUSES`
(:func:`run_command`): 2 for a usage or data error (:class:`Refusal`, a missing or foreign ledger
file, data bound to another budget, a missing column: before anything is read, charged or
released), 1 for a refusal such as an exhausted budget, 130 for Ctrl-C; each error is one line on
standard error, never a traceback. ``--help`` is plain text in one style for every command
(:class:`HelpFormatter`, :func:`apply_help_style`).

Files a command writes (``--out``) go through :func:`atomic_output`: written to a temporary file
beside the target and renamed over it only when complete, removed on an error or Ctrl-C, so a
partial file never stands where a complete one is expected. :func:`check_output_size` refuses
sizes that cannot fit before anything is allocated.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from ..data.fingerprint import data_file_fingerprint
from ..errors import (
    BudgetExceededError,
    DPInferError,
    InvalidDataError,
    LedgerConnectionError,
    PrivacyWarning,
    RunStoreError,
    UnknownDatasetError,
    UnsupportedEventError,
)
from ..models.shipped.registry import MODEL_HELP, MODELS, load_release, model_args
from ..privacy import Ledger
from ..privacy.ledger import DataBindingError
from ..privacy.ledger_store import redact


class Refusal(Exception):
    """A usage or data error found before anything was read, charged or released (exit status 2)."""


def one_line(message: object) -> str:
    """``message`` as one line (its non-blank lines joined by spaces)."""
    return " ".join(part.strip() for part in str(message).splitlines() if part.strip())


def error(message: object) -> None:
    """Print ``dpinfer: error: <message on one line>`` on standard error."""
    print(f"dpinfer: error: {one_line(message)}", file=sys.stderr)


_ROLE = re.compile(r":(?:[\w-]+:)+`([^`]*)`")  # :func:`x`, :py:class:`~a.b`, :mod:`title <target>`


def _role_text(match: re.Match[str]) -> str:
    text = match.group(1).strip()
    if text.endswith(">") and "<" in text:  # `title <target>`: the title
        return text[: text.rindex("<")].strip()
    if text.startswith("~"):  # `~pkg.mod.name`: the last component
        return text[1:].rsplit(".", 1)[-1]
    return text


def plain_text(text: str | None) -> str:
    """A docstring or help text as plain text for ``--help``: reST roles (``:func:`x``` -> ``x``),
    literal markers (````x```` -> ``x``) and literal-block markers (``Example::`` -> ``Example:``, a
    lone ``::`` dropped) removed; the common indentation of a docstring removed, line breaks kept."""
    if not text:
        return text or ""
    import inspect

    text = inspect.cleandoc(text) if "\n" in text else text
    text = _ROLE.sub(_role_text, text)
    text = re.sub(r"``(.+?)``", r"\1", text, flags=re.S)
    text = re.sub(r"(?m)^[ \t]*::[ \t]*$", "", text)  # a paragraph that is only "::"
    text = re.sub(r"(?m)[ \t]+::[ \t]*$", "", text)  # "text ::" -> "text"
    text = re.sub(r"(?m)(\S)::[ \t]*$", r"\1:", text)  # "Example::" -> "Example:"
    return text


_NO_DEFAULT: tuple[Any, ...] = (None, "", False, True, [], (), {})


def shows_default(action: argparse.Action, help_text: str) -> bool:
    """Whether ``--help`` adds ``(default: X)`` to an option: only an optional option with a
    meaningful default (not None, empty, a switch's True/False or a suppressed one) whose help does
    not already say what its default is."""
    default = action.default
    if action.required or default is argparse.SUPPRESS or action.nargs == 0:
        return False
    if not action.option_strings and action.nargs not in (argparse.OPTIONAL, argparse.ZERO_OR_MORE):
        return False
    if any(default is v or (type(default) is type(v) and default == v) for v in _NO_DEFAULT):
        return False
    return "default" not in help_text.lower()


class HelpFormatter(argparse.HelpFormatter):
    """The one ``--help`` style of every command: plain text (:func:`plain_text`), descriptions and
    epilogs keep their line breaks, and an option's default is shown once, only where meaningful
    (:func:`shows_default`)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "".join(indent + line for line in plain_text(text).splitlines(keepends=True))

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.help is None or action.help is argparse.SUPPRESS:
            return action.help
        text = plain_text(action.help)
        if action.default is None:  # "(None: 5000)": what an unset option means, said as a default
            text = text.replace("(None: ", "(default: ")
        if shows_default(action, text):
            text += " (default: %(default)s)"
        return text


#: The old name of :class:`HelpFormatter` (one formatter for every command now).
DefaultsFormatter = HelpFormatter


def apply_help_style(parser: argparse.ArgumentParser) -> None:
    """Give ``parser`` and every sub-command parser below it :class:`HelpFormatter`."""
    parser.formatter_class = HelpFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):  # aliases share a parser
                if sub is not parser:
                    apply_help_style(sub)


def add_command(subparsers: Any, name: str, **kwargs: Any) -> argparse.ArgumentParser:
    """``subparsers.add_parser`` with :class:`HelpFormatter` (defaults shown in --help)."""
    kwargs.setdefault("formatter_class", HelpFormatter)
    if "help" in kwargs:
        kwargs.setdefault("description", kwargs["help"])
    return subparsers.add_parser(name, **kwargs)


def unsupported_event_advice(exc: Exception, args: argparse.Namespace) -> str:
    """What to say when a budget's accountant cannot account a release (budgets cannot change).

    Only budgets on the 'pure' or 'advanced' accountant refuse releases ('pld' and 'rdp' account
    every release). The advice never suggests another data-set name or ledger for the same data:
    that would leave the data set's total spend unbounded.
    """
    ledger = getattr(args, "ledger", None)
    dataset = getattr(args, "dataset", None)
    if not ledger:
        return one_line(exc)
    head = one_line(exc).split(" The budget of ")[0]  # the ledger's own advice is restated below
    return (
        f"{head} Nothing was charged or released. The budget of {dataset or 'this data set'!r} in "
        f"{redact(ledger)} keeps the accountant it was registered with, which cannot account this "
        "release: make only releases it accounts from these data (a 'pure' budget: Laplace, "
        "geometric and sparse-vector releases)."
    )


#: Exit status of a command stopped by Ctrl-C (128 + SIGINT, as shells report it).
INTERRUPTED = 130


#: ``(library phrase, command-line phrase)`` pairs a command declares (``set_defaults(cli_hints=...)``)
Hints = tuple[tuple[str, str], ...]


def rephrase(message: object, hints: Hints = ()) -> str:
    """``message`` on one line, with the library's option names a command declared replaced by its
    flags (in order: list a longer name before a name it contains)."""
    text = one_line(message)
    for api, flag in hints:  # not inside a longer name: max_simulations= is not simulations=
        end = r"(?!\w)" if re.match(r"\w", api[-1]) else ""
        text = re.sub(r"(?<![\w.-])" + re.escape(api) + end, flag.replace("\\", "\\\\"), text)
    return text


#: Python-API advice in the library's warnings and errors, as every command can follow it: ``(library
#: phrase, command-line phrase)``; a command's own ``cli_hints`` come first, and a warning class may
#: carry its own ``cli_hint`` (a ``(library phrase, command-line phrase)`` pair or a tuple of them).
API_HINTS: Hints = (
    ("post.resample(sampler=GLMSamplerOptions(method='hmc', warmup=1000, draws=8000))",
     "GLMPosterior.load(OUT).resample(sampler=GLMSamplerOptions(method='hmc', warmup=1000, draws=8000)) "
     "in Python, OUT being this command's --out file (it keeps the release)"),
    ("post.resample(sampler=GLMSamplerOptions(method='hmc'))",
     "--fallback hmc on the next release, or GLMPosterior.load(OUT).resample(sampler=GLMSamplerOptions("
     "method='hmc')) in Python, OUT being this command's --out file (it keeps the release)"),
    ("dpinfer.inference.glm.glm_posterior(release, ...)",
     "GLMPosterior.load(OUT).resample(...) in Python on a saved --out file"),
    ("method='exact'", "`dpinfer exact-posterior`"),
)


def _class_hints(category: type[Warning], message: Warning | str) -> Hints:
    hint = getattr(message, "cli_hint", None) or getattr(category, "cli_hint", None)
    if not hint:
        return ()
    if isinstance(hint[0], str):
        return (tuple(hint),)
    return tuple(tuple(h) for h in hint)


def format_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    line: str | None = None,
    hints: Hints = (),
) -> str:
    """A warning as the command line shows it: ``dpinfer: warning: Category: message`` on one line
    (not Python's ``file:line: Category: message`` and the source line, which name dpinfer's own
    code rather than anything the user can act on), with Python-API advice in the command's flags
    (:func:`rephrase` with the command's hints, the warning's ``cli_hint`` and :data:`API_HINTS`)."""
    hints = (*hints, *_class_hints(category, message), *API_HINTS)
    return f"dpinfer: warning: {category.__name__}: {rephrase(message, hints)}\n"


@contextmanager
def cli_warnings(hints: Hints = ()) -> Iterator[None]:
    """Within this block every warning is shown once, by :func:`format_warning` (restored afterwards).

    The one warning handler of the command line: a warning whose text was already shown during the
    command (the same message from another place in the library, or issued again) is not shown
    again. Only the format changes: which warnings are shown, and ``warnings.catch_warnings(record=True)``
    around a command (the tests), are untouched."""
    original = warnings.formatwarning
    shown: set[str] = set()

    def fmt(message: Warning | str, category: type[Warning], filename: str, lineno: int,
            line: str | None = None) -> str:  # fmt: skip
        text = format_warning(message, category, filename, lineno, line, hints)
        if text in shown:
            return ""  # nothing is written for a warning already shown
        shown.add(text)
        return text

    warnings.formatwarning = fmt
    try:
        yield
    finally:
        warnings.formatwarning = original


def without_warning_lines(summary: str) -> str:
    """A result's summary without its ``  warning: ...`` lines: the command shows those findings as
    warnings (once each, in its flags), so printing the library's copy (in Python-API terms) as
    well would show each twice."""
    return "\n".join(ln for ln in summary.splitlines() if not ln.startswith("  warning: "))


@contextmanager
def shown_warnings() -> Iterator[None]:
    """Record the body's warnings (every one, even one a caller's filters or ``catch_warnings``
    would keep from standard error) and show them afterwards through the command's handler: each
    distinct warning once, as :func:`format_warning` writes it (inside :func:`run_command`)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for w in caught:
        sys.stderr.write(warnings.formatwarning(w.message, w.category, w.filename, w.lineno, w.line))


#: Every command's exit statuses, ``(status, meaning)``: ``dpinfer --help`` and the README list them.
EXIT_STATUSES: tuple[tuple[int, str], ...] = (
    (0, "success"),
    (1, "refused or failed: an exhausted or retired budget, a release the budget's accountant cannot "
        "account, an error after the release was charged"),
    (2, "usage or data error: a bad flag or option value, a missing or malformed file, a missing column, "
        "a value outside its bounds (nothing was charged)"),
    (3, "the result failed its own diagnostics (check: miscalibrated; smc-abc: incomplete; "
        "exact-posterior: Pareto k > 0.7)"),
    (INTERRUPTED, "interrupted by Ctrl-C (outputs are written whole or not at all)"),
)
#: Exit status of a refusal (e.g. an exhausted budget) or a failure.
REFUSED = 1
#: Exit status of a usage or data error (as argparse's own usage errors).
USAGE_ERROR = 2


def exit_status(exc: BaseException) -> int | None:
    """The exit status of an expected error (:data:`EXIT_STATUSES`), None for an unexpected one."""
    from ..privacy.ledger_store import BudgetOwnerError

    if getattr(exc, "charged", False):  # failed after the release: it WAS charged
        return REFUSED
    if isinstance(exc, (BudgetExceededError, UnsupportedEventError, BudgetOwnerError, LedgerConnectionError)):
        return REFUSED
    if isinstance(exc, (Refusal, ValueError, UnknownDatasetError, FileNotFoundError, IsADirectoryError,
                        NotADirectoryError, PermissionError, RunStoreError)):  # fmt: skip
        return USAGE_ERROR
    if isinstance(exc, DPInferError):
        return REFUSED
    return None


def run_command(func: Callable[[argparse.Namespace], int | None], args: argparse.Namespace) -> int:
    """Run a command with the exit statuses of :data:`EXIT_STATUSES`: a usage or data error exits
    with status 2, a refusal (an exhausted budget) with 1, Ctrl-C with 130, each with one line on
    standard error (never a traceback); warnings are one line each, each shown once
    (:func:`cli_warnings`). Errors and warnings name the command's flags where the command declared
    them (``args.cli_hints``, :func:`rephrase`)."""
    hints: Hints = tuple(getattr(args, "cli_hints", ()) or ())
    try:
        with cli_warnings(hints):
            return int(func(args) or 0)
    except KeyboardInterrupt:
        out = getattr(args, "out", None)
        kept = (f" {out} was not written or replaced (outputs are written whole or not at all)." if out
                else "")
        resume = (" Rerun the same command with --resume RUN_ID to continue from the last checkpoint."
                  if getattr(args, "runs", None) else "")
        print(f"dpinfer: interrupted (Ctrl-C).{kept}{resume}", file=sys.stderr)
        return INTERRUPTED
    except BrokenPipeError:  # `dpinfer ... | head` closed the pipe: stop quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush must not fail again
        return 141
    except UnsupportedEventError as exc:
        error(unsupported_event_advice(exc, args))
        return REFUSED
    except Exception as exc:
        status = exit_status(exc)
        if status is None:
            raise
        error(rephrase(exc, (*hints, *API_HINTS)))
        return status


def module_present(name: str) -> bool:
    """Whether the module ``name`` is part of this build, without importing it or its parent
    packages (``find_spec("dpinfer.release.dpvi")`` would import ``dpinfer.release``, a tenth of a
    second of every start-up): a ``dpinfer.*`` name is looked up as a file of this package."""
    if name == "dpinfer" or name.startswith("dpinfer."):
        path = Path(__file__).resolve().parents[1].joinpath(*name.split(".")[1:])
        return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def progress_bar(total: int, desc: str, enabled: bool | None = None) -> Any:
    """A ``tqdm.auto`` bar on standard error; ``enabled=None`` shows it on a terminal or in a
    notebook (:func:`dpinfer.inference.smc.progress.progress_bar`)."""
    from ..inference.smc.progress import progress_bar as _bar

    return _bar(total, desc, enabled, unit="draw")


def count(value: str) -> int:
    """A whole number >= 1 from the command line (an argparse ``type``); ``1e6`` reads as 1000000,
    so an absurd size reaches the size checks instead of a parse error."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if number != number or number in (float("inf"), float("-inf")) or number != int(number) or number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number >= 1")
    return int(number)


def pick(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    """``{name: args.name}`` for options passed on unchanged as keyword arguments."""
    return {name: getattr(args, name) for name in names}


# --- option blocks --------------------------------------------------------------------------


def add_run_options(parser: argparse.ArgumentParser, step: str) -> None:
    """``--runs`` and ``--resume``: record a long run in a run store and continue it later."""
    parser.add_argument(
        "--runs",
        help=f"run store (SQLite file or postgresql:// URL): record this run and checkpoint it after every "
        f"{step}; `dpinfer runs list --runs STORE` shows the runs (None: not recorded)",
    )
    parser.add_argument(
        "--resume",
        metavar="RUN_ID",
        help="continue this interrupted run of --runs from its last checkpoint (same command line "
        "otherwise); the result equals an uninterrupted run's",
    )


def add_ledger_options(parser: argparse.ArgumentParser) -> None:
    """``--ledger`` and ``--no-ledger`` for a command that releases from confidential data."""
    parser.add_argument(
        "--ledger",
        default=None,
        help="privacy ledger (SQLite file or postgresql:// URL, made by `dpinfer budget init`) charged "
        "before the release",
    )
    parser.add_argument(
        "--no-ledger",
        action="store_true",
        help="release WITHOUT charging any ledger: nothing bounds the total spend on these data",
    )
    parser.add_argument(
        "--purpose",
        default="",
        help="why this release is made (free text, recorded with its charge in the ledger's history)",
    )


def add_release_options(parser: argparse.ArgumentParser) -> None:
    """``--model``, ``--observed``, ``--epsilon``, ``--model-args``: an already released statistic."""
    models = "; ".join(f"{m}: {MODEL_HELP[m]}" for m in MODELS)
    keys = "; ".join(f"{m}: {', '.join(model_args(m))}" for m in MODELS)
    parser.add_argument(
        "--model",
        required=True,
        type=_model_name,
        metavar="MODEL",
        help=f"the model of the release: one of ({models}); or your own model as package.module:factory, a "
        "function returning a dpinfer PrivateDataModel, called with --model-args (and epsilon= if it takes "
        "it; the current directory is importable)",
    )
    parser.add_argument(
        "--observed",
        required=True,
        help='the observed release: a JSON file holding a list of numbers (e.g. [0.0, 0.003, 0.68]) or an '
        'object {"observed": [...], "epsilon": E, "model_args": {...}} (what `dpinfer release` writes), or '
        "'builtin' for the synthetic release shipped with dpinfer at --epsilon (linreg, naive-bayes, sir)",
    )
    parser.add_argument(
        "--epsilon", type=float, help="privacy level of the observed release (overrides the file's)"
    )
    parser.add_argument(
        "--model-args",
        default="{}",
        help="JSON object of model keyword arguments, e.g. '{\"population\": 10000}'; "
        f"keys per model: {keys}",
    )
    for flag, what in (("--prior-mean", "location"), ("--prior-sd", "scale (sd)")):
        parser.add_argument(
            flag, type=_numbers, default=None, metavar="X[,X...]",
            help=f"the prior's {what} in the parameters' units, one number or one per parameter (the "
            f"model argument {flag[2:].replace('-', '_')} of gaussian-mean, linreg, sir; overrides "
            "--model-args and the release file)",
        )


def load_model(spec: str, epsilon: float | None, model_args: dict[str, Any]) -> Any:
    """The model a ``--model`` names: a registry model (``gaussian-mean``, ...; ``epsilon`` None: 1)
    or ``package.module:factory`` called with ``model_args`` (and ``epsilon=`` when given and the
    factory takes it). The one loader of every command's ``--model``, as ``--observed`` commands
    load theirs (:func:`~dpinfer.models.shipped.registry.load_release`): a factory is imported by
    :func:`dpinfer.models.user_factory.build_user_model`, with the current directory importable."""
    from ..models.shipped.registry import build_model
    from ..models.user_factory import build_user_model, is_user_model

    if spec in MODELS:
        return build_model(spec, 1.0 if epsilon is None else epsilon, **model_args)
    if not is_user_model(spec):
        raise InvalidDataError(
            f"--model must be one of {', '.join(MODELS)} or 'package.module:factory', got {spec!r}."
        )
    return build_user_model(spec, epsilon, **model_args)[0]


def _numbers(value: str) -> float | list[float]:
    """``--prior-mean`` / ``--prior-sd``: one number, or comma-separated numbers."""
    try:
        parts = [float(v) for v in value.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number or comma-separated numbers, got {value!r}"
        ) from None
    return parts[0] if len(parts) == 1 else parts


def _model_name(value: str) -> str:
    """A ``--model`` value: a built-in name or ``package.module:factory`` (imported later)."""
    if value in MODELS or ":" in value:
        return value
    raise argparse.ArgumentTypeError(
        f"unknown model {value!r}: choose one of {', '.join(MODELS)}, or name your own model's factory as "
        "package.module:factory"
    )


def add_backend_options(parser: argparse.ArgumentParser, default: str, workers: str, seed: str) -> None:
    """``--backend`` (default ``default``), ``--workers`` (as ``n_workers``) and ``--seed``, with
    the help texts given: the keyword arguments of the backends' callers."""
    parser.add_argument(
        "--backend", default=default,
        help="where simulations run: auto (times a batch: serial for cheap simulators, else processes) | "
        "serial | processes | dask | tcp://scheduler:8786"
    )
    parser.add_argument("--workers", type=int, dest="n_workers", metavar="WORKERS", help=workers)
    parser.add_argument("--seed", type=int, default=0, help=seed)


def add_output_options(parser: argparse.ArgumentParser, progress: str | None = None) -> None:
    """``--no-progress`` (when ``progress`` is its help) and ``--json`` (a JSON summary)."""
    if progress is not None:
        parser.add_argument("--no-progress", action="store_true", help=progress)
    parser.add_argument("--json", action="store_true", help="print a JSON summary")


def release_from_args(args: argparse.Namespace) -> tuple[Any, Any, float]:
    """``(model, observed, epsilon)`` for the options of :func:`add_release_options`; the
    command line's ``--epsilon`` and ``--model-args`` override those of the JSON file."""
    try:
        kwargs = json.loads(args.model_args) if args.model_args else {}
    except json.JSONDecodeError as exc:
        raise ValueError(f"--model-args is not JSON ({exc.msg}): {args.model_args!r}; "
                         "give an object such as '{\"population\": 10000}'.") from None
    if not isinstance(kwargs, dict):
        raise ValueError(f"--model-args must be a JSON object of keyword arguments, got {args.model_args!r}.")
    for key in ("prior_mean", "prior_sd"):
        if getattr(args, key, None) is not None:
            kwargs[key] = getattr(args, key)
    return load_release(args.model, args.observed, args.epsilon, kwargs)


# --- releases from confidential data --------------------------------------------------------


def open_release_ledger(
    args: argparse.Namespace, data_file: str | Path, default_dataset: str | None = None
) -> tuple[Ledger | None, str | None]:
    """The ledger and data-set name a release is charged to, or ``(None, None)`` with --no-ledger.

    Refuses (:class:`Refusal`) unless exactly one of ``--ledger`` / ``--no-ledger`` is given, and
    ``--dataset`` without ``--ledger``. The returned ledger is bound to the records' fingerprint of
    ``data_file`` (:meth:`~dpinfer.privacy.ledger.Ledger.for_data`): its charge is refused,
    atomically, when that file is bound to (or was charged to) another data set, or when the data
    set was registered with another file (``dpinfer budget init --data FILE``); the same is
    checked here first, before anything is read, fitted, charged or released, and so is the
    command's ``--out`` (:func:`check_output_path`).
    """
    dataset = getattr(args, "dataset", None)
    if getattr(args, "out", None):  # an output that cannot be written is refused before the charge
        check_output_path(args.out, folder_ok=True)
    if args.ledger and args.no_ledger:
        raise Refusal("--ledger and --no-ledger contradict each other; pass one of them.")
    if not args.ledger:
        if dataset:
            raise Refusal(
                f"--dataset {dataset} names a budget in a ledger, but no --ledger was given: pass "
                "--ledger PATH_OR_URL to charge it (nothing was charged or released)."
            )
        if not args.no_ledger:
            raise Refusal(
                "this command releases a private result: pass --ledger PATH --dataset NAME (register "
                "the budget with `dpinfer budget init`) or, to release unaccounted, --no-ledger."
            )
        return None, None
    ledger = Ledger(args.ledger)  # never creates a file: a typo is refused
    dataset = dataset or default_dataset
    if not dataset:
        raise Refusal("--ledger needs --dataset NAME (registered with `dpinfer budget init`).")
    path = Path(data_file)
    if not path.is_file():
        raise FileNotFoundError(f"data file {path} not found; nothing was charged or released.")
    fingerprint = data_file_fingerprint(path, ledger=ledger, dataset=dataset)  # the file's records
    try:
        ledger.check_data(dataset, fingerprint)
    except DataBindingError as exc:
        raise Refusal(f"{path}: {exc}") from None
    return ledger.for_data(fingerprint).acting(purpose=getattr(args, "purpose", "") or ""), dataset


# --- files written by the commands ----------------------------------------------------------

#: The largest output a command writes without being told it is on purpose (bytes).
MAX_OUTPUT_BYTES = 8 * 2**30


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:.3g} GiB"


def check_output_size(
    what: str, n_bytes: float, out: str | Path, *, memory_bytes: float = 0.0, how_to_shrink: str
) -> None:
    """Refuse (:class:`Refusal`) an output of ``n_bytes`` (and ``memory_bytes`` held in memory)
    that exceeds :data:`MAX_OUTPUT_BYTES`, the free disk space beside ``out`` or the machine's
    memory: estimated before anything is allocated or written. ``how_to_shrink`` says what to do."""
    folder = Path(out).resolve().parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    free = shutil.disk_usage(folder).free
    limits = [(MAX_OUTPUT_BYTES, f"the {_gib(MAX_OUTPUT_BYTES)} limit on one output file")]
    limits.append((free, f"the {_gib(free)} free on the disk of {folder}"))
    problems = [text for limit, text in limits if n_bytes > limit]
    total_memory = _memory_bytes()
    if memory_bytes and total_memory and memory_bytes > 0.5 * total_memory:
        problems.append(
            f"half of this machine's {_gib(total_memory)} of memory ({_gib(memory_bytes)} needed)"
        )
    if problems:
        raise Refusal(
            f"{what} would write about {_gib(n_bytes)} to {out}, more than {' and '.join(problems)}; "
            f"nothing was written. {how_to_shrink}"
        )


def _memory_bytes() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return None


def check_output_path(out: str | Path, *, folder_ok: bool = False) -> None:
    """Refuse (:class:`Refusal`) an ``--out`` that cannot be written, before anything is charged:
    a path inside a regular file or an unwritable folder, or (unless ``folder_ok``: the command
    adds its own suffix to the name) an existing folder. Missing parent folders are fine (the
    command creates them)."""
    target = Path(out)
    if target.is_dir() and not folder_ok:
        raise Refusal(f"--out {target} is a folder; give a file name. Nothing was charged or written.")
    folder = target.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise Refusal(f"--out {target} cannot be written ({folder} is not a writable folder). Nothing was "
                      "charged or written.")


@contextmanager
def atomic_output(out: str | Path, suffix: str = "") -> Iterator[Path]:
    """A temporary path beside ``out`` to write to; renamed over ``out`` when the body returns.

    On an error or Ctrl-C (``KeyboardInterrupt``) the temporary file is removed and ``out`` is
    left as it was (absent, or the previous complete file): a partial output never stands in
    place of a complete one. The parent folder is created if missing.
    """
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_dir():
        raise InvalidDataError(f"--out {target} is a folder; give a file name.")
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=(suffix or "") + ".partial",
                                dir=target.parent)
    os.close(fd)
    tmp = Path(name)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # as an ordinary new file (mkstemp makes it private)
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomic(out: str | Path, text: str) -> Path:
    """Write ``text`` to ``out`` through :func:`atomic_output`; returns ``out``."""
    with atomic_output(out) as tmp:
        tmp.write_text(text)
    return Path(out)


@contextmanager
def release_notices(accounted: bool) -> Iterator[None]:
    """Show the release's :class:`~dpinfer.privacy.PrivacyWarning` s as one-line notices.

    Unaccounted (``--no-ledger``): after a successful release, one notice says so instead of the
    library's warning. Other warnings pass through unchanged.
    """
    caught: list[str] = []
    original = warnings.showwarning

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        if issubclass(category, PrivacyWarning):
            caught.append(one_line(message))
        else:
            original(message, category, filename, lineno, file, line)

    with warnings.catch_warnings():
        warnings.simplefilter("always", PrivacyWarning)
        warnings.showwarning = show
        yield
    if not accounted:
        print(
            "dpinfer: notice: released WITHOUT a ledger (--no-ledger): NOT ACCOUNTED against any "
            "privacy budget; its report says accounted: false.",
            file=sys.stderr,
        )
    for message in dict.fromkeys(caught):
        if accounted or "ledger" not in message.lower():
            print(f"dpinfer: warning: {message}", file=sys.stderr)


def mark_unaccounted(result: Any, ledger: Ledger | None) -> None:
    """A release made without a ledger says ``accounted: false`` in its privacy report."""
    import dataclasses

    if ledger is None and result.privacy is not None and result.privacy.accounted:
        result.privacy = dataclasses.replace(result.privacy, accounted=False)
