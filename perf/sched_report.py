"""Tables (markdown) and plot (PNG) of the bench_sched.py replays of a results folder.

python3 perf/sched_report.py perf/results/sched   # seed-*/ there -> table.md, sched.png

The busy-cluster figures are computed again here from each replay's raw rows
(sched_figures.py), so every seed and policy is judged over the same kind of window: from
the first submission + the replay's warmup to the last submission (the drain left out).
A policy's figure over several seeds is their mean, with the lowest and highest beside it.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import sched_figures

ORDER = ("plain", "block", "lua", "lua-small", "lua-aligned")
LABEL = {
    "plain": "(a) tree, plain sbatch",
    "block": "(b) block, --segment",
    "lua": "(c) plugin, small_jobs: whole",
    "lua-small": "(c') whole, 1-tray jobs unenforced",
    "lua-aligned": "(c'') plugin, small_jobs: aligned",
}
GPUS = 576
WARMUP_S = 60.0  # the empty cluster absorbs the first minute's arrivals: no queue yet


class Replay:
    """One replay (mode, seed): summary, rows, samples, and its figures over the window."""

    def __init__(self, folder: Path, mode: str, seed: str) -> None:
        self.mode, self.seed = mode, seed
        self.summary = json.loads((folder / f"{mode}.summary.json").read_text())
        self.rows = json.loads((folder / f"{mode}.jobs.json").read_text())
        self.samples = json.loads((folder / f"{mode}.samples.json").read_text())
        win = sched_figures.window(self.rows, WARMUP_S)
        self.window = win
        if win is None:
            self.busy: dict = {}
            return
        w0, w1 = win
        self.busy = sched_figures.throughput(self.rows, w0, w1, 4)
        self.busy["waits"] = sched_figures.wait_table(sched_figures.waits(self.rows, w0, w1))
        multi = [r for r in self.rows if "aligned" in r and w0 <= r["start"] <= w1]
        self.busy["aligned"] = (sum(r["aligned"] for r in multi), len(multi))
        offered = sum(
            r["nodes_asked"] * r["duration_s"]
            for r in self.rows
            if r.get("submit") is not None and w0 <= r["submit"] <= w1
        )
        self.busy["offered"] = offered / (144 * (w1 - w0))
        t0 = min(r["submit"] for r in self.rows if r.get("submit") is not None)
        self.busy["window_s"] = (round(w0 - t0), round(w1 - t0))
        inside = [x for x in self.samples if w0 - t0 <= x["t"] <= w1 - t0]
        self.busy["queued_pct"] = (
            100 * sum(x.get("pending_trays", 0) >= 144 for x in inside) / max(1, len(inside))
        )


def load(folder: Path) -> list[Replay]:
    out = []
    for seed_dir in sorted(folder.glob("seed-*"), key=lambda p: p.name):
        seed = seed_dir.name.removeprefix("seed-")
        out += [
            Replay(seed_dir, m, seed) for m in ORDER if (seed_dir / f"{m}.summary.json").exists()
        ]
    return out


def spread(values: list[float], fmt: str = "{:.0f}") -> str:
    """mean (min-max) over seeds; one seed: the value."""
    if not values:
        return "-"
    mean = fmt.format(statistics.mean(values))
    if len(values) == 1:
        return mean
    return f"{mean} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def by_mode(replays: list[Replay]) -> dict[str, list[Replay]]:
    out: dict[str, list[Replay]] = {}
    for r in replays:
        if r.busy:
            out.setdefault(r.mode, []).append(r)
    return out


def main_table(replays: list[Replay]) -> str:
    modes = by_mode(replays)
    base = {r.seed: r.busy["gpu_h_per_h"] for r in modes.get("plain", [])}
    lines = [
        "| policy | seeds | offered load | samples with >= 144 trays queued "
        "| throughput, GPU-h/h (of 576) | vs (a), same seed "
        "| allocated GPU-h/h | bounded slowdown (mean) | wait p95, all jobs | multi-tray jobs "
        "aligned |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for mode in ORDER:
        rs = modes.get(mode)
        if not rs:
            continue
        tput = [r.busy["gpu_h_per_h"] for r in rs]
        rel = [100 * r.busy["gpu_h_per_h"] / base[r.seed] - 100 for r in rs if r.seed in base]
        al = [r.busy["aligned"] for r in rs]
        aligned = f"{100 * sum(a for a, _ in al) / max(1, sum(n for _, n in al)):.0f}%"
        aligned += f" of {sum(n for _, n in al)}"
        waits = [r.busy["waits"]["all"] for r in rs]
        cens = sum(w["censored"] for w in waits)
        p95 = spread([w["p95"] for w in waits]) + " s" + (f" ({cens} cut)" if cens else "")
        lines.append(
            f"| {LABEL[mode]} | {','.join(r.seed for r in rs)} "
            f"| {spread([r.busy['offered'] for r in rs], '{:.2f}')} "
            f"| {spread([r.busy['queued_pct'] for r in rs], '{:.0f}%')} "
            f"| {spread(tput)} ({100 * statistics.mean(tput) / GPUS:.0f}%) "
            f"| {spread(rel, '{:+.0f}%') if rel else '-'} "
            f"| {spread([r.busy['alloc_gpu_h_per_h'] for r in rs])} "
            f"| {'>=' if cens else ''}{spread([w['bsld_mean'] for w in waits], '{:.1f}')} "
            f"| {p95} | {aligned} |"
        )
    return "\n".join(lines) + "\n"


def wait_cell(w: dict | None) -> str:
    if not w:
        return "-"
    lb = ">=" if w["censored"] else ""
    cut = f", {w['censored']} cut" if w["censored"] else ""
    return f"{lb}{w['p50']:.0f} / {lb}{w['p95']:.0f} / {lb}{w['p99']:.0f} ({w['jobs']}{cut})"


def wait_table(replays: list[Replay]) -> str:
    classes = sched_figures.CLASSES
    lines = [
        "| policy | seed | window | "
        + " | ".join(f"wait {c}: p50 / p95 / p99 s (jobs)" for c in classes)
        + " | bounded slowdown per class |",
        "|---|---|---|" + "---|" * len(classes) + "---|",
    ]  # fmt: skip
    for mode, rs in by_mode(replays).items():
        for r in sorted(rs, key=lambda r: r.seed):
            w = r.busy["waits"]
            bsld = " / ".join(f"{w[c]['bsld_mean']:.1f}" if c in w else "-" for c in classes)
            lines.append(
                f"| {LABEL[mode]} | {r.seed} | {r.busy['window_s'][0]}-{r.busy['window_s'][1]} s"
                f" | " + " | ".join(wait_cell(w.get(c)) for c in classes) + f" | {bsld} |"
            )
    return "\n".join(lines) + "\n"


def scheduler_lines(replays: list[Replay]) -> str:
    seen: dict[str, list[str]] = {}
    for r in replays:
        conf = r.summary.get("scheduler") or {}
        key = ", ".join(f"{k}={v}" for k, v in sorted(conf.items()))
        seen.setdefault(key, []).append(r.mode)
    return "".join(
        f"- {', '.join(sorted(set(modes)))}: {key}\n" for key, modes in seen.items() if key
    )


def machine_lines(replays: list[Replay]) -> str:
    out = []
    for r in replays:
        la = r.summary.get("load_avg") or [0, 0, 0]
        out.append(
            f"- {r.mode} seed {r.seed}: ended {r.summary.get('time_utc')} UTC, load average"
            f" {la[0]:.1f} / {la[1]:.1f} / {la[2]:.1f}, {r.summary['jobs']} jobs,"
            f" {r.summary['started']} started, {r.summary['cancelled_before_start']} cut"
            " before they started"
        )
    return "\n".join(out) + "\n"


def plot(replays: list[Replay], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (depth, busy, tput) = plt.subplots(3, 1, figsize=(9, 10))
    colors = {m: f"C{i}" for i, m in enumerate(ORDER)}
    labelled: set[str] = set()
    for r in replays:
        t = [x["t"] for x in r.samples]
        label = None if r.mode in labelled else LABEL[r.mode]
        labelled.add(r.mode)
        depth.plot(t, [x.get("pending_trays", 0) for x in r.samples], color=colors[r.mode],
                   lw=0.8, label=label)  # fmt: skip
        busy.plot(t, [x["busy_nodes"] for x in r.samples], color=colors[r.mode], lw=0.8)
    depth.axhline(144, color="grey", lw=0.5)
    for r in replays[:1]:
        for ax in (depth, busy):
            for x in r.busy.get("window_s", ()):
                ax.axvline(x, color="k", lw=0.5, ls="--")
    depth.set_ylabel("queue depth: trays asked\nby pending jobs")
    depth.set_yscale("symlog", linthresh=144)
    depth.legend(fontsize=7, loc="upper left")
    depth.set_title("Full-queue replays through Slurm, 8 x 18 trays (16 + 2 spare), every seed")
    busy.set_ylabel("busy trays (of 144)")
    busy.set_xlabel("seconds since the first submission")
    busy.axhline(128, color="grey", lw=0.5, ls=":")
    modes = by_mode(replays)
    names = [m for m in ORDER if m in modes]
    for i, m in enumerate(names):
        vals = [r.busy["gpu_h_per_h"] for r in modes[m]]
        tput.bar(i, statistics.mean(vals), color=colors[m])
        tput.plot([i] * len(vals), vals, "k.", ms=6)
    tput.set_xticks(range(len(names)), [LABEL[m] for m in names], fontsize=7)
    tput.set_ylabel("GPU-h of work per hour\n(window, each seed a dot)")
    tput.axhline(GPUS, color="grey", lw=0.5)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def report(replays: list[Replay]) -> str:
    return (
        "Busy-cluster figures (mean over seeds, lowest-highest in brackets):\n\n"
        + main_table(replays)
        + "\nWaits per job size class and seed (p50 / p95 / p99; '>=': jobs still pending at"
        " the cut counted with their wait so far):\n\n"
        + wait_table(replays)
        + "\nScheduler (`scontrol show config` of the running cluster):\n\n"
        + scheduler_lines(replays)
        + "\nReplays (machine load when each ended):\n\n"
        + machine_lines(replays)
    )


def main() -> int:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "perf/results/sched")
    replays = load(folder)
    if not replays:
        print(f"sched_report: no seed-*/*.summary.json in {folder}", file=sys.stderr)
        return 2
    text = report(replays)
    (folder / "table.md").write_text(text)
    print(text)
    plot(replays, folder / "sched.png")
    print(f"plot: {folder / 'sched.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
