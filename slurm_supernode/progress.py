"""What a training script may tell snrun about its progress, in one stdlib-only call.

    from slurm_supernode import progress
    progress.report(tokens=4096, loss=float(loss))   # once per step, after optimizer.step()

Where snrun installed its optimizer-step hook (every rank that imports torch, forked or
spawned), the call only adds the figures to the step the hook records; where no hook runs (a
script without a torch optimizer, a rank where snrun cannot be imported) each call is a step.
``checkpoint=True`` marks that a checkpoint was just written (its age is shown). Outside an
snrun job it does nothing and costs a dictionary lookup. Imports nothing but the standard
library and snrun's record format.
"""

from __future__ import annotations


def report(
    *,
    tokens: int | None = None,
    samples: int | None = None,
    loss: float | None = None,
    checkpoint: bool = False,
) -> None:
    """This step's tokens, samples and loss (any may be left out)."""
    from slurm_supernode.observe import step_recorder

    recorder = step_recorder.install()
    if recorder is None:
        return
    recorder.note(tokens=tokens, samples=samples, loss=loss, checkpoint=checkpoint)
    if not recorder.hooked:
        recorder.on_step()


def flush() -> None:
    """Write the records kept so far (snrun does this itself at the rank's end)."""
    from slurm_supernode.observe import step_recorder

    recorder = step_recorder.current()
    if recorder is not None:
        recorder.flush()
