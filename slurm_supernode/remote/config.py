"""The user's clusters: ``clusters.yaml`` names the login nodes `snrun --cluster NAME` reaches.

The file is per user (``$XDG_CONFIG_HOME/snrun/clusters.yaml``, default ``~/.config/...``;
``$SNRUN_CLUSTERS_FILE`` names another). Each cluster says how to reach its login node and how
snrun runs there::

    clusters:
      lab:
        destination: lab-login        # what `ssh` accepts: host, user@host, a ~/.ssh/config alias
        snrun: snrun                  # the command on the cluster (default snrun)
        site: lab                     # SNRUN_SITE there
        jobs_dir: /scratch/me/jobs    # SNRUN_JOBS_DIR there
        path: [/opt/slurm/bin]        # put first on PATH there
        env: {SLURM_CONF: /etc/slurm/slurm.conf}
        ssh_options: [-o, ProxyJump=gw]
        code_dir: .cache/slurm-supernode/code   # the shipped code store (home-relative or absolute)

Problems are reported as the site loader does: every one at its ``file:line:col``.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from slurm_supernode.errors import ConfigError, InputError, Problem
from slurm_supernode.user_settings import SnrunSettings

DEFAULT_CODE_DIR = ".cache/slurm-supernode/code"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEYS = ("destination", "snrun", "site", "jobs_dir", "path", "env", "ssh_options", "code_dir")


@dataclass(frozen=True)
class Cluster:
    """One named cluster: how to reach its login node and how snrun runs there."""

    name: str
    destination: str
    snrun: tuple[str, ...] = ("snrun",)
    site: str | None = None
    jobs_dir: str | None = None
    path: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    ssh_options: tuple[str, ...] = ()
    code_dir: str = DEFAULT_CODE_DIR
    source: str = field(default="", compare=False)  # file:line of its entry, for messages


def clusters_file(settings: SnrunSettings | None = None) -> Path:
    """Where the user's clusters are named."""
    settings = settings or SnrunSettings.from_environ()
    if settings.clusters_file:
        return Path(settings.clusters_file).expanduser()
    base = settings.config_home or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base, "snrun", "clusters.yaml")


def load_clusters(path: Path) -> dict[str, Cluster]:
    """Every cluster of ``path``; ConfigError lists each problem at its line."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(
            f"no clusters file at {path}",
            where="--cluster",
            hint="name your clusters there (docs/remote.md), or set SNRUN_CLUSTERS_FILE",
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}", where="--cluster") from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError([Problem(str(path), line, col, f"not YAML: {problem}")]) from None
    reader = _Reader(str(path))
    found = reader.clusters(root)
    if reader.problems:
        raise ConfigError(reader.problems)
    return found


def find_cluster(name: str, settings: SnrunSettings | None = None) -> Cluster:
    """The cluster called ``name``, or an InputError naming the file and the known names."""
    path = clusters_file(settings)
    found = load_clusters(path)
    if name not in found:
        known = ", ".join(sorted(found)) or "none"
        raise InputError(
            f"no cluster {name!r} in {path} (known: {known})",
            where="--cluster",
            hint="add it under `clusters:` (docs/remote.md)",
        )
    return found[name]


class _Reader:
    """Typed values out of composed YAML nodes, each problem at its node's line."""

    def __init__(self, file: str):
        self.file = file
        self.problems: list[Problem] = []

    def problem(self, node: object, message: str, hint: str | None = None) -> None:
        mark = getattr(node, "start_mark", None)
        line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        self.problems.append(Problem(self.file, line, col, message, hint))

    def mapping(self, node: object, what: str) -> list[tuple[str, object, object]]:
        import yaml

        if not isinstance(node, yaml.MappingNode):
            self.problem(node, f"{what} must be a mapping")
            return []
        out: list[tuple[str, object, object]] = []
        seen: set[str] = set()
        for key, value in node.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else None
            if not isinstance(name, str):
                self.problem(key, f"{what}: keys must be names")
                continue
            if name in seen:
                self.problem(key, f"{what}: {name!r} given twice")
                continue
            seen.add(name)
            out.append((name, key, value))
        return out

    def text(self, node: object, what: str) -> str | None:
        import yaml

        if not isinstance(node, yaml.ScalarNode) or not str(node.value).strip():
            self.problem(node, f"{what} must be a non-empty string")
            return None
        value = str(node.value)
        if "\0" in value or "\n" in value:
            self.problem(node, f"{what} must be one line")
            return None
        return value

    def texts(self, node: object, what: str) -> tuple[str, ...]:
        import yaml

        if isinstance(node, yaml.ScalarNode):
            one = self.text(node, what)
            return (one,) if one else ()
        if not isinstance(node, yaml.SequenceNode):
            self.problem(node, f"{what} must be a list of strings")
            return ()
        return tuple(v for item in node.value if (v := self.text(item, f"{what} item")))

    def clusters(self, root: object) -> dict[str, Cluster]:
        if root is None:
            self.problems.append(Problem(self.file, 1, 1, "empty file: no `clusters:`"))
            return {}
        found: dict[str, Cluster] = {}
        for key, key_node, value in self.mapping(root, "the file"):
            if key != "clusters":
                self.problem(key_node, f"unknown key {key!r}", hint="the file holds `clusters:`")
                continue
            for name, name_node, entry in self.mapping(value, "clusters"):
                if not _NAME.fullmatch(name):
                    self.problem(
                        name_node, f"bad cluster name {name!r}", hint="letters, digits, _.-"
                    )
                    continue
                cluster = self.cluster(name, name_node, entry)
                if cluster is not None:
                    found[name] = cluster
        return found

    def cluster(self, name: str, name_node: object, node: object) -> Cluster | None:
        values: dict[str, object] = {}
        for key, key_node, value in self.mapping(node, f"cluster {name!r}"):
            if key not in _KEYS:
                self.problem(
                    key_node,
                    f"cluster {name!r}: unknown key {key!r}",
                    hint="one of " + ", ".join(_KEYS),
                )
                continue
            values[key] = self.value(name, key, value)
        if "destination" not in values:
            self.problem(name_node, f"cluster {name!r}: no `destination:` (what ssh connects to)")
            return None
        if any(v is None for v in values.values()):
            return None  # its problem is already listed
        mark = getattr(name_node, "start_mark", None)
        return Cluster(
            name=name,
            source=f"{self.file}:{mark.line + 1 if mark else 1}",
            **values,  # type: ignore[arg-type]
        )

    def value(self, name: str, key: str, node: object) -> object:
        what = f"cluster {name!r}: {key}"
        if key in ("path", "ssh_options"):
            return self.texts(node, what)
        if key == "env":
            return self.env(node, what)
        text = self.text(node, what)
        if text is None:
            return None
        if key == "destination" and text.startswith("-"):
            self.problem(node, f"{what} {text!r} starts with '-'", hint="a host, not an option")
            return None
        if key == "snrun":
            try:
                words = tuple(shlex.split(text))
            except ValueError as exc:
                self.problem(node, f"{what}: {exc}")
                return None
            return words
        return text

    def env(self, node: object, what: str) -> tuple[tuple[str, str], ...] | None:
        out = []
        for key, key_node, value in self.mapping(node, what):
            if not _ENV_NAME.fullmatch(key):
                self.problem(key_node, f"{what}: {key!r} is not a variable name")
                continue
            text = self.text(value, f"{what}: {key}")
            if text is not None:
                out.append((key, text))
        return tuple(out)
