"""The shape of the code (issue 43 item 3): no module longer than 600 lines, one module one
job; and no import cycle between fsyncbench's modules, the case import-linter's
``acyclic_siblings`` contract (pyproject.toml) does not see included: a package's
``__init__`` and one of its own modules importing each other (the ``__init__`` is no child
of its package). An import by name (``importlib``, as ``fsyncbench/__init__.py`` reaches the
API) is no import statement and is not seen."""

from __future__ import annotations

from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]

#: The longest a module may be, in lines as ``wc -l`` counts them.
MAX_LINES = 600

#: The folders whose every module keeps to :data:`MAX_LINES`.
SHAPED = ("fsyncbench", "lab")


def _graph() -> grimp.ImportGraph:
    # every import, those only for type checking and those inside functions too, as
    # import-linter reads them; no cache written into the checkout
    return grimp.build_graph("fsyncbench", cache_dir=None)


def test_no_module_is_longer_than_600_lines():
    long = sorted(
        (path.relative_to(ROOT).as_posix(), lines)
        for folder in SHAPED
        for path in (ROOT / folder).rglob("*.py")
        if "__pycache__" not in path.parts and (lines := path.read_bytes().count(b"\n")) > MAX_LINES
    )
    assert not long, f"modules over {MAX_LINES} lines (split them by job): " + "; ".join(
        f"{path} has {lines}" for path, lines in long
    )


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """One cycle of imports per strongly connected group of modules (Tarjan), each as the
    modules it runs through, its first module again last."""
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:  # the import graph is shallow: recursion is safe
        order[v] = low[v] = len(order)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in order:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], order[w])
        if low[v] == order[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for module in sorted(edges):
        if module not in order:
            visit(module)
    cycles = []
    for group in groups:
        first = group[0]
        back = next(w for w in edges[first] if w in group)
        chain = graph.find_shortest_chain(importer=back, imported=first) or (back, first)
        cycles.append([first, *chain])
    return cycles


def test_no_package_init_and_its_own_module_import_each_other():
    graph = _graph()
    found = []
    for package in sorted(graph.modules):
        inside = [
            m
            for m in sorted(graph.find_descendants(package))
            if graph.chain_exists(importer=package, imported=m)
            and graph.chain_exists(importer=m, imported=package)
        ]
        if not inside:
            continue
        loops = [
            (
                *graph.find_shortest_chain(importer=package, imported=m),
                *graph.find_shortest_chain(importer=m, imported=package)[1:],
            )
            for m in inside
        ]
        shortest = min(loops, key=len)
        found.append(
            " -> ".join(shortest)
            + f" ({len(inside)} of its modules in a cycle with it: {', '.join(inside)})"
        )
    assert not found, "a package's __init__ and its own modules import each other: " + "; ".join(
        found
    )


def test_no_import_cycle_between_modules():
    cycles = _cycles(_graph())
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)
