"""Argument parsing shared by every sub-command: one-line errors and checked value types.

argparse prints a 12-14 line usage block on a bad value and exits; snrun's own errors are one
line with a hint. ``Parser.error`` turns argparse's messages into an ``InputError`` (exit 2)
that names the option, says what was wrong in snrun's words and always carries a hint, so
``snrun plan --tp 0`` prints ``snrun plan: error: --tp: must be >= 1, got 0 (hint: ...)``.
The value types (``int_range``, ``number``) refuse NaN, infinities and out-of-range values at
the option itself, before anything is loaded.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable

from slurm_supernode.errors import InputError


class UsageError(InputError):
    """A bad command line (unknown option, bad value, missing argument). Exit 2.

    ``prog`` is the (sub-)command whose line was bad, e.g. ``snrun site export``."""

    prog: str | None = None


# argparse's messages, matched only when an option is wrong (re compiles them then)
_ARG = r"(?s)^argument (?P<arg>[^:]+): (?P<msg>.*)$"
_CHOICE = r"(?s)^invalid choice: '(?P<value>.*)' \(choose from (?P<choices>.*)\)$"
_BAD_TYPE = r"(?s)^invalid (?P<type>\w+) value: '(?P<value>.*)'$"
_TYPE_WORDS = {"int": "a whole number", "float": "a number"}


class Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line (``UsageError``) instead of usage + exit.

    Long options are matched exactly (``allow_abbrev=False``, inherited by sub-parsers, which
    argparse builds with this class): ``--dry`` is an unknown option, not ``--dry-run``.
    """

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # type: ignore[override]
        where, text, hint = self._translate(message)
        exc = UsageError(text, where=where, hint=hint or f"'{self.prog} --help' lists the options")
        exc.prog = self.prog
        raise exc

    def _metavar(self, option: str) -> str:
        action = self._option_string_actions.get(option)
        if action is not None and isinstance(action.metavar, str):
            return action.metavar
        return "VALUE"

    def _help_of(self, option: str) -> str | None:
        action = self._option_string_actions.get(option)
        if action is None:
            for a in self._actions:
                if option in (a.metavar, a.dest):
                    action = a
        if action is None or not action.help or action.help == argparse.SUPPRESS:
            return None
        return action.help.replace("%%", "%")

    def _translate(self, message: str) -> tuple[str | None, str, str | None]:
        m = re.match(_ARG, message)
        if m:
            where, msg = m["arg"], m["msg"]
            option = where.split("/")[-1]
            text, hint = _split_hint(msg)
            choice = re.match(_CHOICE, text)
            bad = re.match(_BAD_TYPE, text)
            if choice:
                choices = [c.strip().strip("'") for c in choice["choices"].split(",")]
                close = _close_matches(choice["value"], choices, n=1)
                hint = (
                    (f"did you mean {close[0]!r}? " if close else "")
                    + "one of "
                    + ", ".join(choices)
                )
                text = f"unknown value {choice['value']!r}"
            elif bad:
                kind = _TYPE_WORDS.get(bad["type"], f"a valid {bad['type']}")
                text = f"must be {kind}, got {bad['value']!r}"
            elif text == "expected one argument":
                text = "needs a value"
                hint = hint or f"{option} {self._metavar(option)}: " + (
                    self._help_of(option) or f"see '{self.prog} --help'"
                )
            elif text.startswith("not allowed with argument "):
                text = "cannot be combined with " + text.removeprefix("not allowed with argument ")
                hint = hint or "give only one of them"
            return where, text, hint or self._help_of(option)
        if message.startswith("unrecognized arguments: "):
            extra = message.removeprefix("unrecognized arguments: ").split()
            first = extra[0] if extra else "?"
            if first.startswith("-"):
                options = [o for o in self._option_string_actions if o.startswith("--")]
                close = _close_matches(first.split("=")[0], options, n=1)
                hint = f"did you mean {close[0]}? " if close else ""
                return None, f"unknown option {first}", hint + f"see '{self.prog} --help'"
            return None, f"unexpected argument {first!r}", f"see '{self.prog} --help'"
        if message.startswith("the following arguments are required: "):
            names = message.removeprefix("the following arguments are required: ")
            return None, f"missing {names}", f"usage: {self._usage_line()}"
        if message.startswith("one of the arguments ") and message.endswith(" is required"):
            names = message.removeprefix("one of the arguments ").removesuffix(" is required")
            return None, f"give one of {names}", f"see '{self.prog} --help'"
        text, hint = _split_hint(message)
        return None, text, hint

    def _usage_line(self) -> str:
        return " ".join(self.format_usage().split()).removeprefix("usage: ")


def _split_hint(text: str) -> tuple[str, str | None]:
    body, sep, hint = text.partition(" (hint: ")
    return (body, hint.removesuffix(")")) if sep else (text, None)


def int_range(minimum: int | None = None, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number within [minimum, maximum]."""

    def convert(text: str) -> int:
        try:
            value = int(text.strip().replace("_", ""), 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be <= {maximum}, got {value}")
        return value

    convert.__name__ = "int"
    return convert


def number(
    minimum: float | None = None,
    maximum: float | None = None,
    *,
    above: float | None = None,
    below: float | None = None,
) -> Callable[[str], float]:
    """An argparse type: a finite number in range (``above``/``below`` exclude the bound)."""

    def convert(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum:g}, got {value:g}")
        if above is not None and value <= above:
            raise argparse.ArgumentTypeError(f"must be > {above:g}, got {value:g}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be <= {maximum:g}, got {value:g}")
        if below is not None and value >= below:
            raise argparse.ArgumentTypeError(f"must be < {below:g}, got {value:g}")
        return value

    convert.__name__ = "float"
    return convert


def explicit_options(parser: argparse.ArgumentParser, argv: list[str]) -> frozenset[str]:
    """The dests the command line set itself, as opposed to their defaults.

    An option given explicitly that the request cannot honour is refused; a default may still
    adapt silently. ``parser``'s defaults are suppressed here (it is of no further use), so
    that parsing ``argv`` again leaves exactly the given options in the namespace.
    """
    _suppress_defaults(parser)
    ns, _ = parser.parse_known_args(argv)
    return frozenset(vars(ns))


def _suppress_defaults(parser: argparse.ArgumentParser) -> None:
    parser._defaults.clear()
    for action in parser._actions:
        action.default = argparse.SUPPRESS
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _suppress_defaults(sub)


def refuse_if(ns: argparse.Namespace, dest: str, option: str, why: str | None, instead: str):
    """Refuse ``option`` (exit 2) when it was given explicitly and ``why`` says why it cannot
    apply to this request; ``instead`` is the hint. ``ns.explicit`` comes from ``main``."""
    if why and dest in getattr(ns, "explicit", ()):
        raise InputError(why, where=option, hint=instead)


# Upper bounds for counts given on the command line: far above any real machine, low enough
# that nothing downstream allocates per unit of an absurd number.
MAX_COUNT = 1_000_000
positive = int_range(1, MAX_COUNT)
non_negative = int_range(0, MAX_COUNT)


class Renamed(argparse.Action):
    """An old option name that now means something else: a one-line error with the new name."""

    def __init__(self, option_strings, dest, new: str = "", why: str = "", **kw):
        kw.setdefault("help", argparse.SUPPRESS)
        super().__init__(option_strings, dest=argparse.SUPPRESS, **kw)
        self.new = new
        self.why = why

    def __call__(self, parser, namespace, values, option_string=None):
        raise UsageError(
            f"renamed to {self.new}",
            where=option_string,
            hint=f"use {self.new}; {self.why}" if self.why else f"use {self.new}",
        )


def add_job_argument(p: argparse.ArgumentParser) -> None:
    """JOB (an attempt's job id or the job directory), the same for every job sub-command."""
    p.add_argument("job", metavar="JOB", help="Slurm job id of any attempt, or the job directory")


def add_jobs_dir_arguments(p: argparse.ArgumentParser) -> None:
    """Where JOB's directory is looked up: --jobs-dir, else the site's paths.jobs_dir."""
    p.add_argument(
        "--jobs-dir",
        metavar="DIR",
        help="where job directories are (default $SNRUN_JOBS_DIR, else the site's paths.jobs_dir)",
    )
    p.add_argument("--site", help="site name or file whose paths.jobs_dir to use ($SNRUN_SITE)")


def job_dir_of(ns: argparse.Namespace):
    """The job directory JOB names (an InputError that lists where it looked, if none)."""
    from slurm_supernode.launch.jobdir import find_job_dir, jobs_root

    return find_job_dir(jobs_root(ns.jobs_dir, ns.site), ns.job)


def add_service_job_arguments(p: argparse.ArgumentParser, what: str, time: str | None) -> None:
    """Options of the jobs snrun submits for itself (bench, doctor): where results go, the
    Slurm limits, extra env profiles and the job directory root. ``time``: -t's default."""
    p.add_argument("--db", metavar="PATH", help="results database (default: the site's)")
    p.add_argument("-t", "--time", default=time, help=f"time limit of the {what} job")
    p.add_argument("-p", "--partition")
    add_env_profile_argument(p)
    # The old name (sbatch's --profile is acct_gather profiling) still works: schedules
    # installed before the rename replay it from the registry and from scrontab lines.
    p.add_argument("--profile", dest="profile", action="append", help=argparse.SUPPRESS)
    p.add_argument("--jobs-dir", help="where job directories go (default: the site's)")


def add_env_profile_argument(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """--env-profile NAME (repeatable): extra env profiles of the site, into ``ns.profile``."""
    p.add_argument(
        "--env-profile",
        dest="profile",
        action="append",
        default=[],
        metavar="NAME",
        help="extra env profile of the site (repeatable)",
    )


def _close_matches(word: str, choices: list[str], n: int) -> list[str]:
    """difflib's "did you mean", imported only when an option is wrong."""
    import difflib

    return difflib.get_close_matches(word, choices, n=n)
