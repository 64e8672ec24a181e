"""The slow node, named while the job runs: one judge (in the supervisor, on the batch node)
reads every rank's step records every ``window`` seconds and compares each node's figure with
the median of its PEERS (the other nodes; ``observe/peers``, the doctor's rule).

The figure is a rank's *busy* time per step (``StepRecord.busy_s``: CPU seconds of the
stepping thread): in synchronous training every rank's step takes as long as the slowest one's
(each waits for it in the collectives), so wall-clock step times are equal across nodes and
name nobody; the time a rank spends working, not waiting, is what differs. A node's figure in
a window is the median over its ranks' steps in that window; where a record has no busy time
(an older writer), its wall-clock seconds stand in.

Busy time misses a slow GPU (its rank may spin on the CPU while it waits for the device): the
devices' own samples are judged too (``runtime/device_judge``: a GPU's SM clock against its
peers'), and a node is named by whichever judge finds it first, once.

As the doctor asks of a slow group, a node is slow only when it is slow in *every* one of
``windows`` consecutive windows with fresh steps (noise moves a window, not several in a row)
by more than ``slow_pct`` %: then a ``SlowNodeMark`` with the evidence goes to
``observe/<attempt>/slow.jsonl`` (once per node and attempt). With the defaults (5 s windows,
3 in a row) a node is named 15-20 s after its ranks' records show it.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from slurm_supernode.observe.peers import above_peers, peers_median
from slurm_supernode.observe.records import (
    DeviceSample,
    SlowNodeMark,
    append,
    attempt_dir,
    slow_path,
)
from slurm_supernode.runtime.device_judge import DeviceJudge

WINDOW = 5.0  # seconds per judged window
# and slower than its peers' median by at least this much busy time per step: figures of a few
# ms move by more than 20% between windows on a loaded machine (seen at load 28: 3.7 against
# 3.0 ms, named twice in a row), which no slow device explains
MIN_GAP = 0.005


@dataclass
class _Tail:
    """Where the judge stopped reading one rank's step file (whole lines only)."""

    offset: int = 0
    partial: bytes = b""


@dataclass
class SlowJudge:
    job_dir: Path
    attempt: int
    supernode_of: Mapping[str, str] = field(default_factory=dict)
    slow_pct: float = 20.0
    windows: int = 3
    window: float = WINDOW
    marked: set[str] = field(default_factory=set)
    _tails: dict[Path, _Tail] = field(default_factory=dict)
    _streak: dict[str, list[float]] = field(default_factory=dict)  # node -> its ratios in a row
    _figures: dict[str, list[float]] = field(default_factory=dict)  # node -> figures so far
    _next: float | None = None
    devices: DeviceJudge | None = None

    def __post_init__(self) -> None:
        if self.devices is None:
            self.devices = DeviceJudge(self.slow_pct, self.windows)

    def look(self, now: float) -> list[SlowNodeMark]:
        """Judge a window if one has passed since the last; the marks it made (new ones)."""
        if self._next is None:
            self._next = now + self.window
        if now < self._next:
            return []
        self._next = now + self.window
        marks = self.judge(self._new_busy(), now)
        return marks + self.judge_devices(self._new_device_samples(), now)

    def judge_devices(self, samples: list[DeviceSample], now: float) -> list[SlowNodeMark]:
        """The devices' new samples: a node with a slow device is named (once, as for steps)."""
        assert self.devices is not None
        marks = []
        for slow in self.devices.judge(samples, now):
            if slow.node in self.marked:
                continue
            self.marked.add(slow.node)
            supernode = self.supernode_of.get(slow.node)
            marks.append(SlowNodeMark(now, slow.node, supernode, slow.ratio, slow.evidence))
        if marks:
            append(slow_path(self.job_dir, self.attempt), list(marks))
        return marks

    def judge(self, busy: Mapping[str, list[float]], now: float) -> list[SlowNodeMark]:
        """One window: ``busy`` is each node's new per-step figures (seconds)."""
        nodes = sorted(n for n, v in busy.items() if v)
        if len(nodes) < 2:
            return []  # no peers, or a window without steps: the streaks stand
        figures = [statistics.median(busy[n]) for n in nodes]
        slow = {
            nodes[i]
            for i in above_peers(figures, self.slow_pct)
            if figures[i] - peers_median(figures, i) >= MIN_GAP
        }
        marks = []
        for i, node in enumerate(nodes):
            self._figures.setdefault(node, []).append(figures[i])
            if node not in slow:
                self._streak.pop(node, None)
                continue
            center = peers_median(figures, i)
            streak = self._streak.setdefault(node, [])
            streak.append(figures[i] / center if center > 0 else float("inf"))
            if len(streak) >= self.windows and node not in self.marked:
                marks.append(self._mark(node, streak, figures[i], center, len(nodes), now))
        if marks:
            append(slow_path(self.job_dir, self.attempt), list(marks))
        return marks

    def _mark(
        self, node: str, streak: list[float], mine: float, center: float, nodes: int, now: float
    ) -> SlowNodeMark:
        self.marked.add(node)
        ratio = statistics.median(streak[-self.windows :])
        evidence = (
            f"busy {mine * 1000:.0f} ms per step against {center * 1000:.0f} ms, the median "
            f"of its {nodes - 1} peer node(s); {ratio:.2f}x (median) in {len(streak)} windows "
            f"of {self.window:g} s in a row (slow above {1 + self.slow_pct / 100:.2f}x)"
        )
        return SlowNodeMark(now, node, self.supernode_of.get(node), ratio, evidence)

    def _new_busy(self) -> dict[str, list[float]]:
        """Each node's per-step figures written since the last look (the first step of a rank,
        which holds its start-up, left out)."""
        out: dict[str, list[float]] = {}
        for path in sorted(attempt_dir(self.job_dir, self.attempt).glob("rank-*.steps.jsonl")):
            for raw in self._new_lines(path):
                step, node = raw.get("step"), raw.get("node")
                if not isinstance(step, int) or step <= 1 or not isinstance(node, str):
                    continue
                figure = raw.get("busy_s")
                if not isinstance(figure, (int, float)):
                    figure = raw.get("seconds")
                if isinstance(figure, (int, float)):
                    out.setdefault(node, []).append(float(figure))
        return out

    def _new_device_samples(self) -> list[DeviceSample]:
        """The devices' samples the nodes' samplers wrote since the last look."""
        out = []
        for path in sorted(attempt_dir(self.job_dir, self.attempt).glob("*.samples.jsonl")):
            for raw in self._new_lines(path):
                if raw.get("kind") != "device":
                    continue
                try:
                    out.append(DeviceSample(**raw))  # type: ignore[arg-type]
                except TypeError:  # a line of another format: skipped, as readers do
                    continue
        return out

    def _new_lines(self, path: Path) -> list[dict[str, object]]:
        tail = self._tails.setdefault(path, _Tail())
        try:
            with open(path, "rb") as fh:
                fh.seek(tail.offset)
                data = fh.read()
        except OSError:
            return []
        tail.offset += len(data)
        data = tail.partial + data
        lines = data.split(b"\n")
        tail.partial = lines.pop()  # an unfinished last line waits for its end
        out = []
        for line in lines:
            try:
                raw = json.loads(line)
            except ValueError:
                continue
            if isinstance(raw, dict):
                out.append(raw)
        return out


def judge_for(job_dir: Path, attempt: int, site_file: str, hosts: list[str]) -> SlowJudge | None:
    """The judge of an attempt, with the site's thresholds and each node's super node; None for
    a job of one node (no peers)."""
    if len(hosts) < 2:
        return None
    supernode_of: dict[str, str] = {}
    slow_pct, windows = 20.0, 3
    try:
        from slurm_supernode.site.loader import load_site

        site = load_site(site_file)
        slow_pct, windows = site.observe.slow_pct, site.observe.slow_windows
        for host in hosts:
            try:
                supernode_of[host] = site.node(host).supernode
            except KeyError:
                continue
    except Exception:  # the judge works without super node names
        pass
    return SlowJudge(job_dir, attempt, supernode_of, slow_pct, windows)


def read_marks(job_dir: Path, attempt: int) -> list[SlowNodeMark]:
    from slurm_supernode.observe.records import read

    return [m for m in read(slow_path(job_dir, attempt)) if isinstance(m, SlowNodeMark)]
