"""The house: data flows one way. No two modules of `planner` import each other, directly
or around a loop (imports inside functions count; type-checking-only imports do not)."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent / "planner"


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def import_graph() -> nx.DiGraph:
    modules = {_module(p): p for p in ROOT.rglob("*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_lines(tree)
        for node in ast.walk(tree):
            if getattr(node, "lineno", None) in skip:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # `from planner.x import y`: y may itself be a module of the package
                targets = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
            for target in targets:
                if target in modules and target != name:
                    graph.add_edge(name, target)
                    break
    return graph


def test_the_import_graph_has_no_cycle() -> None:
    graph = import_graph()
    assert graph.number_of_nodes() > 40
    cycles = list(nx.simple_cycles(graph))
    assert cycles == [], cycles


def test_reports_read_a_plan_not_the_solver() -> None:
    graph = import_graph()
    for module in (m for m in graph if m.startswith("planner.report.")):
        reached = nx.descendants(graph, module)
        assert not any(r.startswith(("planner.optimize", "planner.pipeline")) for r in reached), module


def test_physics_knows_nothing_of_the_solver() -> None:
    graph = import_graph()
    for module in (m for m in graph if m.startswith("planner.perf.") and "calibration" not in m):
        reached = nx.descendants(graph, module)
        assert not any(r.startswith(("planner.optimize", "planner.options", "planner.pipeline")) for r in reached), (
            module
        )


def test_the_rooms_have_no_cycle_either() -> None:
    """Packages too: explain, whatif and the pipeline do not lean on each other in a loop."""
    rooms = nx.DiGraph()
    for a, b in import_graph().edges():
        ra, rb = ".".join(a.split(".")[:2]), ".".join(b.split(".")[:2])
        if ra != rb:
            rooms.add_edge(ra, rb)
    assert list(nx.simple_cycles(rooms)) == []
