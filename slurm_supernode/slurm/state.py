"""A job's state as Slurm keeps it: one base state plus flags.

Slurm's job state is a base (PENDING, RUNNING, COMPLETED, ...) and flags (COMPLETING,
REQUEUED, CONFIGURING, ...). The data_parser JSON (`scontrol show job --json`, `sacct --json`,
24.11: v0.0.42, 26.05: v0.0.45) lists both, `["COMPLETED", "COMPLETING"]`, while epilogs still
run. The text forms (`scontrol show job -o`, `squeue -o %T`, `sacct -P`) print one word: the
first set flag in Slurm's precedence (`job_state_string`), else the base; a flag word hides the
base, which `from_text` then infers where the flag implies one and leaves UNKNOWN where not.

A job has ended when its base state is final and it is not COMPLETING (its epilogs are done,
its nodes released). `phase` is the one word the text form prints, the same for both readers.
"""

from __future__ import annotations

from dataclasses import dataclass

# Base states after which a job will not run again unless someone requeues it.
FINAL_STATES = frozenset(
    {
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
        "OUT_OF_MEMORY",
        "BOOT_FAIL",
        "DEADLINE",
    }
)
BASE_STATES = FINAL_STATES | {"PENDING", "RUNNING", "SUSPENDED"}

# The flags Slurm's text form prints instead of the base, in its precedence
# (src/common/slurm_protocol_defs.c: job_state_string), with the base each one implies there
# (None: the text form does not tell; REVOKED: the job went to another cluster of a federation).
TEXT_FLAGS: dict[str, str | None] = {
    "COMPLETING": None,
    "STAGE_OUT": None,
    "CONFIGURING": "RUNNING",
    "RESIZING": "RUNNING",
    "REQUEUED": "PENDING",
    "REQUEUE_FED": "PENDING",
    "REQUEUE_HOLD": "PENDING",
    "SPECIAL_EXIT": "PENDING",
    "STOPPED": "RUNNING",
    "REVOKED": "CANCELLED",
    "RESV_DEL_HOLD": "PENDING",
    "SIGNALING": None,
}
# Flags under which the job waits for someone to release it.
HOLD_FLAGS = frozenset({"REQUEUE_HOLD", "SPECIAL_EXIT", "RESV_DEL_HOLD"})
UNKNOWN = "UNKNOWN"


@dataclass(frozen=True)
class JobState:
    """`base` (upper case; UNKNOWN when no reader could tell) and `flags`."""

    base: str
    flags: frozenset[str] = frozenset()

    @classmethod
    def from_json(cls, value: object) -> JobState:
        """data_parser `job_state` (`["PENDING", "REQUEUED"]`) or sacct's `state.current`;
        the base is the word that is a base state, whatever the order; a bare string is read
        as text."""
        if isinstance(value, str):
            return cls.from_text(value)
        if not isinstance(value, list):
            return cls(UNKNOWN)
        words = [w.upper() for w in value if isinstance(w, str) and w]
        bases = [w for w in words if w in BASE_STATES]
        base = bases[0] if bases else UNKNOWN
        return cls(base, frozenset(w for w in words if w != base))

    @classmethod
    def from_text(cls, text: str | None) -> JobState:
        """One word of a text form: `COMPLETING`, `CANCELLED by 0` (sacct), `PENDING`;
        `A+B` or `A,B` (several words) are read like the JSON list."""
        head = (text or "").strip().split()[:1]
        if not head:
            return cls(UNKNOWN)
        words = [w for w in head[0].replace(",", "+").upper().split("+") if w]
        if len(words) > 1:
            return cls.from_json(words)
        word = words[0]
        if word in TEXT_FLAGS:
            return cls(TEXT_FLAGS[word] or UNKNOWN, frozenset({word}))
        return cls(word)

    @property
    def completing(self) -> bool:
        """Epilogs still run on some of its nodes; node lists then name only those."""
        return "COMPLETING" in self.flags

    @property
    def ended(self) -> bool:
        """Over, its nodes released; it will not run again unless someone requeues it."""
        return self.base in FINAL_STATES and not self.completing

    @property
    def pending(self) -> bool:
        """Waiting to run (held, requeued or still completing an earlier run included)."""
        return self.base == "PENDING"

    @property
    def running(self) -> bool:
        return self.base == "RUNNING" and not self.flags & {"COMPLETING", "CONFIGURING"}

    @property
    def held(self) -> bool:
        """It waits for a release (`scontrol release`) and will not start by itself."""
        return bool(self.flags & HOLD_FLAGS)

    @property
    def phase(self) -> str:
        """The one word Slurm's text form prints: the first flag in its precedence, else
        the base (what `wait_for` and callers match)."""
        for flag in TEXT_FLAGS:
            if flag in self.flags:
                return flag
        return self.base

    def __str__(self) -> str:
        """`COMPLETED+COMPLETING`: the base (when known), then the flags."""
        head = [] if self.base == UNKNOWN and self.flags else [self.base]
        return "+".join(head + sorted(self.flags))
