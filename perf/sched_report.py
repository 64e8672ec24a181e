"""Table (markdown) and plot (PNG) of the bench_sched.py replays found in a results folder.

python3 perf/sched_report.py perf/results/sched   # -> table.md, sched.png there
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ORDER = ("plain", "block", "lua", "lua-small", "lua-aligned")
LABEL = {
    "plain": "(a) tree, plain sbatch",
    "block": "(b) block, --segment",
    "lua": "(c) snrun job_submit.lua",
    "lua-small": "(c') lua, 1-tray jobs unenforced",
    "lua-aligned": "(c'') lua, small_jobs: aligned",
}


def load(folder: Path) -> list[tuple[dict, list[dict]]]:
    out = []
    for mode in ORDER:
        summary = folder / f"{mode}.summary.json"
        if summary.exists():
            samples = json.loads((folder / f"{mode}.samples.json").read_text())
            out.append((json.loads(summary.read_text()), samples))
    return out


def table(runs: list[tuple[dict, list[dict]]]) -> str:
    base = next((s for s, _ in runs if s["mode"] == "plain"), None)
    lines = [
        "| policy | GPU util. (asked) | vs (a) | GPU util. (allocated) | makespan | wait mean"
        " | wait p95 | multi-node jobs aligned | fragmented super nodes (mean / max) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s, _ in runs:
        if s.get("util_asked_pct") is None:  # nothing ran (every job cancelled before start)
            lines.append(f"| {LABEL[s['mode']]} | no job started | | | | | | | |")
            continue
        rel = f"{s['util_asked_pct'] / base['util_asked_pct'] * 100 - 100:+.0f}%" if base else "-"
        aligned = f"{s['aligned_pct']:.0f}% of {s['multi_node_jobs']}"
        makespan = f"{s['makespan_s']:.0f} s"
        if s.get("complete") is False:  # cut by --budget: figures over the window
            makespan += f" (cut at --budget, {s['started']} of {s['jobs']} jobs started)"
        lines.append(
            f"| {LABEL[s['mode']]} | {s['util_asked_pct']:.1f}% | {rel} | "
            f"{s['util_alloc_pct']:.1f}% | {makespan} | {s['wait_mean_s']:.0f} s | "
            f"{s['wait_p95_s']:.0f} s | {aligned} | {s['fragmented_mean']:.1f} / "
            f"{s['fragmented_max']} |"
        )
    return "\n".join(lines) + "\n"


def plot(runs: list[tuple[dict, list[dict]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (busy, frag) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    for s, samples in runs:
        t = [x["t"] for x in samples]
        busy.plot(t, [x["busy_nodes"] for x in samples], label=LABEL[s["mode"]])
        frag.plot(t, [x["fragmented"] for x in samples], label=LABEL[s["mode"]])
    busy.set_ylabel("busy trays (of 144)")
    busy.axhline(144, color="grey", lw=0.5)
    busy.axhline(128, color="grey", lw=0.5, ls=":")
    frag.set_ylabel("fragmented super nodes (of 8)")
    frag.set_xlabel("seconds since the first submission")
    busy.legend(fontsize=8, loc="lower right")
    busy.set_title("Helios-fitted job mix replayed through Slurm, 8 x 18 trays (16 + 2 spare)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main() -> int:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "perf/results/sched")
    runs = load(folder)
    if not runs:
        print(f"sched_report: no *.summary.json in {folder}", file=sys.stderr)
        return 2
    text = table(runs)
    (folder / "table.md").write_text(text)
    print(text)
    plot(runs, folder / "sched.png")
    print(f"plot: {folder / 'sched.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
