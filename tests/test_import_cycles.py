"""No import cycle anywhere in the package: between modules of one package, or between packages.

A cycle between two modules shows up as a cycle among the children of their closest common
package, so checking the children of every package (each child standing for everything under
it, function-level imports included) finds every cycle. import-linter's ``acyclic_siblings``
contract in .importlinter says the same for ``make lint``; this test does not depend on its
version.
"""

from __future__ import annotations

import grimp

ROOT = "slurm_supernode"


def _child(package: str, module: str) -> str:
    """The child of ``package`` that ``module`` is or lies under."""
    return ".".join(module.split(".")[: package.count(".") + 2])


def _cycles(nodes: set[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(edges.get(target, ())))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def package_cycles(graph: grimp.ImportGraph, root: str = ROOT) -> dict[str, list[list[str]]]:
    """For every package under ``root``: the cycles among its children."""
    modules = {m for m in graph.modules if m == root or m.startswith(root + ".")}
    packages = {m for m in modules if graph.find_children(m)}
    result = {}
    for package in sorted(packages):
        children = graph.find_children(package)
        edges: dict[str, set[str]] = {}
        for module in modules:
            if not module.startswith(package + "."):
                continue
            source = _child(package, module)
            for imported in graph.find_modules_directly_imported_by(module):
                if imported.startswith(package + "."):
                    target = _child(package, imported)
                    if target != source:
                        edges.setdefault(source, set()).add(target)
        cycles = _cycles(set(children), edges)
        if cycles:
            result[package] = cycles
    return result


def test_no_import_cycle_between_modules_or_packages() -> None:
    graph = grimp.build_graph(ROOT, cache_dir=None)
    assert package_cycles(graph) == {}


def test_a_cycle_is_found() -> None:
    """The check itself: a module cycle and a package cycle added to the real graph show up."""
    graph = grimp.build_graph(ROOT, cache_dir=None)
    graph.add_import(importer="slurm_supernode.site.model", imported="slurm_supernode.slurm.jobs")
    graph.add_import(importer="slurm_supernode.slurm.jobs", imported="slurm_supernode.site.model")
    graph.add_import(
        importer="slurm_supernode.placement.layout", imported="slurm_supernode.placement.rankmap"
    )
    cycles = package_cycles(graph)
    assert ["slurm_supernode.site", "slurm_supernode.slurm"] in cycles[ROOT]
    assert any("slurm_supernode.placement.layout" in c for c in cycles["slurm_supernode.placement"])
