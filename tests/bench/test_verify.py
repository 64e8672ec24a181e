"""The correctness check: simulated collectives (no process group) pass it, damage fails it."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from slurm_supernode.bench.collectives import (  # noqa: E402
    count_wrong,
    element_count,
    make_buffers,
)
from slurm_supernode.bench.model import COLLECTIVES  # noqa: E402

pytestmark = pytest.mark.torch


def simulate(collective, count, n, dtype):
    """Each rank's output as the real collective would leave it, computed by hand."""
    cpu = torch.device("cpu")
    bufs = [make_buffers(collective, count, r, n, dtype, cpu) for r in range(n)]
    inputs = [b[0] for b in bufs]
    chunk = count // n
    if collective == "all_reduce":
        total = torch.stack([i.double() for i in inputs]).sum(0).to(inputs[0].dtype)
        return [total.clone() for _ in range(n)]
    if collective == "broadcast":
        return [inputs[0].clone() for _ in range(n)]
    if collective == "all_gather":
        return [torch.cat(inputs) for _ in range(n)]
    if collective == "reduce_scatter":
        total = torch.stack([i.double() for i in inputs]).sum(0).to(inputs[0].dtype)
        return [total[r * chunk : (r + 1) * chunk].clone() for r in range(n)]
    if collective == "all_to_all":
        return [torch.cat([inputs[j][r * chunk : (r + 1) * chunk] for j in range(n)])
                for r in range(n)]  # fmt: skip
    raise AssertionError(collective)


@pytest.mark.parametrize("collective", COLLECTIVES)
@pytest.mark.parametrize(("n", "dtype"), [(2, "float32"), (5, "bfloat16"), (3, "float16")])
def test_simulated_collective_is_correct_and_damage_is_counted(collective, n, dtype):
    count = element_count(collective, 4096, dtype, n)
    outs = simulate(collective, count, n, dtype)
    for r, out in enumerate(outs):
        assert count_wrong(collective, out, r, n, count, dtype) == 0
    damaged = outs[n - 1].clone()
    damaged[7] += 1
    assert count_wrong(collective, damaged, n - 1, n, count, dtype) == 1
    # an output that belongs to another rank (chunks misrouted) is caught where it should be
    if collective in ("reduce_scatter", "all_to_all"):
        assert count_wrong(collective, outs[0], 1, n, count, dtype) > 0
    if collective == "all_gather":
        chunk = count // n
        swapped = torch.cat([outs[0][chunk : 2 * chunk], outs[0][:chunk], outs[0][2 * chunk :]])
        assert count_wrong(collective, swapped, 0, n, count, dtype) > 0


def test_reduction_stays_exact_for_many_ranks_in_bfloat16():
    # 300 ranks would sum past bf16's exact integers; contributors are capped so it stays exact
    n, count = 300, 64
    outs = simulate("all_reduce", count, n, "bfloat16")
    assert count_wrong("all_reduce", outs[0], 0, n, count, "bfloat16") == 0
    assert float(outs[0].max()) <= 256
