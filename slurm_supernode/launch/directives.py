"""``#SBATCH`` lines at the top of a training script, honoured like sbatch does.

sbatch reads ``#SBATCH`` lines from the start of a script until the first line that is neither
blank nor a comment; options given on the command line win. snrun does the same: options it
knows (``-t``, ``-J``, ``-N``...) fill what the command line left unset, every other option goes
to sbatch as is (before ``--sbatch`` ones, so the command line still wins). Pure.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import NamedTuple

from slurm_supernode.errors import InputError

# sbatch options snrun understands itself: option -> (JobSpec-ish field, takes a value);
# ``container.X``: the field X of ``JobSpec.container`` (launch/container_options.py).
KNOWN: dict[str, tuple[str, bool]] = {
    "-J": ("job_name", True),
    "--job-name": ("job_name", True),
    "-p": ("partition", True),
    "--partition": ("partition", True),
    "-t": ("time", True),
    "--time": ("time", True),
    "-A": ("account", True),
    "--account": ("account", True),
    "-q": ("qos", True),
    "--qos": ("qos", True),
    "-o": ("output", True),
    "--output": ("output", True),
    "-e": ("error", True),
    "--error": ("error", True),
    "-d": ("dependency", True),
    "--dependency": ("dependency", True),
    "--mail-type": ("mail_type", True),
    "--mail-user": ("mail_user", True),
    "-D": ("workdir", True),
    "--chdir": ("workdir", True),
    "-N": ("nodes", True),
    "--nodes": ("nodes", True),
    "--exclusive": ("exclusive", False),
    # pyxis' names: snrun puts the training step in the image, never the batch script (which
    # sbatch would do with these options where pyxis is installed)
    "--container-image": ("container.image", True),
    "--container-mounts": ("container.mounts", True),
    "--container-workdir": ("container.workdir", True),
    "--container-env": ("container.env", True),
    "--container-name": ("container.name", True),
    "--container-mount-home": ("container.mount_home", False),
    "--no-container-mount-home": ("container.mount_home", False),
}
# sbatch options snrun sets itself, or that would break how it submits and restarts a job:
# an #SBATCH line with one is refused, naming the line. option -> why.
CONFLICTS: dict[str, str] = {
    "-n": "snrun runs one agent task per node (--ntasks-per-node=1)",
    "--ntasks": "snrun runs one agent task per node (--ntasks-per-node=1)",
    "--ntasks-per-node": "snrun runs one agent task per node; --nproc-per-node sets the ranks",
    "--gres": "snrun asks for the site's devices per node (--gres from the site)",
    "--segment": "snrun asks for whole super nodes itself (-S N)",
    "--switches": "snrun asks for whole super nodes itself (-S N)",
    "--requeue": "snrun's restarts need the job requeueable, as it sets",
    "--no-requeue": "snrun's restarts requeue the job",
    "--open-mode": "snrun appends the logs of all attempts (--open-mode=append)",
    "--signal": "snrun's supervisor needs its own warning signal (B:USR2@90)",
    "--parsable": "snrun reads sbatch's answer itself",
    "-W": "snrun waits itself: snrun -W",
    "--wait": "snrun waits itself: snrun -W",
    "--test-only": "snrun --dry-run shows what would be submitted",
    "-a": "snrun submits one job chain, not an array",
    "--array": "snrun submits one job chain, not an array",
}
# sbatch options that mean something else on snrun's command line: passed to sbatch with a
# notice, so `#SBATCH -S 2` is not mistaken for two super nodes. option -> (sbatch, snrun).
OTHER_MEANING: dict[str, tuple[str, str]] = {
    "-S": ("core specialisation (--core-spec)", "snrun -S N: whole super nodes"),
    "-m": ("task distribution (--distribution)", "snrun -m MODULE: run a module"),
}
# sbatch options that never take a separate value (so the next word is an option, not a value).
_FLAGS = {
    "--contiguous", "--hold", "-H", "--ignore-pbs", "--no-requeue", "--requeue", "--overcommit",
    "-O", "--oversubscribe", "-s", "--parsable", "--quiet", "-Q", "--spread-job", "--test-only",
    "--use-min-nodes", "--verbose", "-v", "--wait", "-W", "--no-kill", "-k", "--get-user-env",
    "--exclusive", "--reboot", "--x11",
}  # fmt: skip


class Directive(NamedTuple):
    """One option from an ``#SBATCH`` line: where it was, what snrun does with it."""

    line: int
    option: str
    value: str | None
    field: str | None  # the snrun field it sets, None: passed to sbatch as is

    @property
    def sbatch_arg(self) -> str:
        """The option as one sbatch argument."""
        if self.value is None:
            return self.option
        sep = "=" if self.option.startswith("--") else ""
        return f"{self.option}{sep}{self.value}"

    @property
    def shown(self) -> str:
        """The option as a script line writes it (``-S 2``, ``--time=5``), for messages."""
        if self.value is None:
            return self.option
        return f"{self.option}{'=' if self.option.startswith('--') else ' '}{self.value}"


def directive_lines(text: str) -> list[tuple[int, str]]:
    """(line number, text after ``#SBATCH``) of the script's leading directive block."""
    out = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if not line.startswith("#"):
            break
        if raw.startswith("#SBATCH"):
            out.append((n, raw[len("#SBATCH") :]))
    return out


def parse_directives(text: str, where: str) -> list[Directive]:
    """Every option of the leading ``#SBATCH`` lines; ``where`` names the file in errors."""
    found: list[Directive] = []
    for n, rest in directive_lines(text):
        try:
            words = shlex.split(rest, comments=True)
        except ValueError as exc:
            raise InputError(f"#SBATCH line: {exc}", where=f"{where}:{n}") from None
        i = 0
        while i < len(words):
            word = words[i]
            if not word.startswith("-"):
                raise InputError(f"#SBATCH line: {word!r} is not an option", where=f"{where}:{n}")
            option, value = word, None
            if word.startswith("--") and "=" in word:
                option, value = word.split("=", 1)
            elif not word.startswith("--") and len(word) > 2:
                option, value = word[:2], word[2:]
            known = KNOWN.get(option)
            takes = known[1] if known else option not in _FLAGS
            if value is None and takes and known is not None:
                if i + 1 >= len(words):
                    raise InputError(f"#SBATCH {option} needs a value", where=f"{where}:{n}")
                value, i = words[i + 1], i + 1
            elif value is None and takes and i + 1 < len(words) and words[i + 1][:1] != "-":
                value, i = words[i + 1], i + 1
            found.append(Directive(n, option, value, known[0] if known else None))
            i += 1
    return found


def read_directives(script: Path) -> list[Directive]:
    """Directives of a script file; none for a file that is not text."""
    try:
        with open(script, "rb") as fh:
            head = fh.read(256 * 1024)
    except OSError:
        return []
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return []
    return parse_directives(text, str(script))


def apply_directives(
    given: dict[str, object], directives: list[Directive], where: str = "SCRIPT"
) -> dict[str, object]:
    """Values for the fields the command line left unset (None), plus ``sbatch_args`` to put
    before the command line's own. Later directives win over earlier ones, like sbatch."""
    out: dict[str, object] = {}
    passthrough: list[str] = []
    for d in directives:
        if d.option in CONFLICTS:
            raise InputError(
                f"#SBATCH {d.shown} conflicts with what snrun sets",
                where=f"{where}:{d.line}",
                hint=f"{CONFLICTS[d.option]}; remove the line (--sbatch=ARG on the command line "
                "overrides snrun knowingly)",
            )
        if d.field is None:
            passthrough.append(d.sbatch_arg)
            continue
        if d.field == "exclusive":
            continue  # snrun's default already
        if given.get(d.field) is not None:
            continue  # the command line wins
        value: object = d.value
        if d.field == "container.mount_home":
            value = not d.option.startswith("--no-")
        if d.field == "nodes":
            try:
                value = int(str(d.value))
            except ValueError:
                raise InputError(
                    f"#SBATCH {d.option} {d.value!r}: snrun takes one node count",
                    where=f"{where}:{d.line}",
                ) from None
        out[d.field] = value
    if passthrough:
        out["sbatch_args"] = tuple(passthrough)
    return out


def directive_notices(directives: list[Directive], where: str = "SCRIPT") -> list[str]:
    """One line per ``#SBATCH`` option that means something else on snrun's command line."""
    out = []
    for d in directives:
        if d.option in OTHER_MEANING:
            sbatch, snrun = OTHER_MEANING[d.option]
            out.append(
                f"{where}:{d.line}: #SBATCH {d.shown} is sbatch's {sbatch}, passed to "
                f"sbatch as is (not {snrun})"
            )
    return out


def blame_line(message: str, directives: list[Directive], where: str = "SCRIPT") -> str | None:
    """``file:line`` of the ``#SBATCH`` line an sbatch error message is about, if one is named.

    sbatch names the option it refuses (``unrecognized option '--foo'``, ``Invalid
    --distribution specification``); the last matching line wins, as the last occurrence is
    the one sbatch used.
    """
    hit = None
    for d in directives:
        if d.field is not None:
            continue  # applied by snrun, not passed to sbatch
        if any(_mentions(message, n) for n in (d.option, d.sbatch_arg)):
            hit = f"{where}:{d.line}"
    return hit


def _mentions(message: str, word: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", message) is not None
