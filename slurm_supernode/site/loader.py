"""Load a site config (YAML) into the ``Site`` model, keeping ``file:line:col`` for every value.

PyYAML's ``compose`` gives a node tree whose nodes carry their start position; one pass over
it checks the shape and types of every key, builds the dataclasses and collects *all* problems
(unknown keys with the closest valid key, wrong types, missing keys, bad hostlists, ...). The
cross-object rules then run in ``validate.py`` on the built model. ``load_site`` raises one
``ConfigError`` listing every problem. Hostlists are expanded once per super node (ClusterShell),
node specs are merged once per distinct layer combination, so a 100k-device site loads fast.

Files: finder.py (finding a site), yaml_guards.py (text, tags, aliases), yaml_reader.py (typed
nodes with positions), build_settings.py / build_supernodes.py / builder.py (the sections),
ip_patterns.py, limits.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from slurm_supernode.errors import ConfigError, Problem
from slurm_supernode.site.builder import SiteBuilder
from slurm_supernode.site.finder import PATH_HINTS, find_site, os_problem, path_problem
from slurm_supernode.site.limits import MAX_FILE_BYTES
from slurm_supernode.site.model import Site
from slurm_supernode.site.validate import validate_site
from slurm_supernode.site.yaml_guards import (
    YAML_LOADER,
    alias_blowup,
    byte_problem,
    tag_problems,
    text_problems,
)


def load_site(name_or_path: str | os.PathLike | None) -> Site:
    """Find, load and validate a site; ConfigError with every problem if it is not valid."""
    path = find_site(name_or_path)
    site, problems = load_file(path)
    if problems or site is None:
        raise ConfigError(problems)
    return site


def load_file(path: str | os.PathLike) -> tuple[Site | None, list[Problem]]:
    """Parse and validate one file; returns the site (None if unusable) and all problems."""
    p = Path(path)
    why = path_problem(p)
    if why is None and p.stat().st_size > MAX_FILE_BYTES:
        why = f"is {p.stat().st_size} bytes; a site config may have at most {MAX_FILE_BYTES}"
    if why is None:
        try:
            data = p.read_bytes()
        except OSError as exc:
            why = os_problem(p, exc)
    if why is not None:
        it = "it " if why.startswith("is ") else ""
        hint = PATH_HINTS.get(why, "check the path")
        return None, [Problem(str(path), 1, 1, f"cannot read the site config: {it}{why}", hint)]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, [byte_problem(str(path), data, exc.start)]
    return parse_site(text, str(path))


def parse_site(text: str, file: str = "<string>") -> tuple[Site | None, list[Problem]]:
    """Parse and validate config text; ``file`` is used in problem locations."""
    bad_text = text_problems(text, file)
    if bad_text:
        return None, bad_text
    try:
        root = yaml.compose(text, Loader=YAML_LOADER)
    except RecursionError:
        return None, [Problem(file, 1, 1, "YAML nesting is too deep", "a site config is flat")]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        what = " ".join(x for x in (exc.context, exc.problem) if x)
        ctx = exc.context_mark
        if ctx is not None and mark is not None and ctx.line != mark.line:
            what += f" (it started at {ctx.line + 1}:{ctx.column + 1})"
        return None, [
            Problem(file, line, col, f"YAML syntax error: {what}", "check indentation and quoting")
        ]
    except yaml.YAMLError:
        return None, [Problem(file, 1, 1, "YAML error", "check the file is YAML")]
    if root is not None and "!" in text:  # tags are only written with '!'
        tags = tag_problems(root, file)
        if tags:
            return None, tags
    if root is not None and "*" in text:  # aliases are only written with '*'
        blowup = alias_blowup(root, file)
        if blowup:
            return None, [blowup]
    builder = SiteBuilder(file)
    site = builder.build(root)
    problems = builder.problems
    if site is not None:
        problems += validate_site(site, builder.src)
    problems = sorted(_dedupe(problems), key=lambda p: (p.line, p.col))
    return (None if builder.fatal else site), problems


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen: set[tuple] = set()
    out = []
    for p in problems:
        key = (p.line, p.col, p.message)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out
