"""No import circle and no upward import anywhere in ``src/a2a_hub`` (docs/architecture.md §1).

The import graph is built by grimp from the source, so it holds every import a module can make:
at module level, inside functions and under ``if TYPE_CHECKING:`` alike (an import moved into a
function to dodge a circle is still the circle).

How an import counts:

* ``import a.b.c`` and ``from a.b.c import name`` import the module ``a.b.c``;
  ``from a.b import c`` imports ``a.b.c`` when ``c`` is a submodule, else the package ``a.b``.
* Importing a module also runs the ``__init__`` of each package above it that is not already
  above the importer (Python loads those first): ``a2a_hub.push.sender`` importing
  ``a2a_hub.server.errors`` imports the package ``a2a_hub.server`` too, while
  ``a2a_hub.server.app`` importing it does not (its own package is already loading). So a
  package's ``__init__`` re-exporting its modules is no circle, but a module that reaches its
  own package's ``__init__`` for a name is.

A circle is a strongly connected component of that graph with more than one module. An upward
import is an import of a module in a higher layer of :data:`LAYERS`, the table of §1; modules of
one layer may import each other (without a circle).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import grimp
import pytest

PACKAGE = "a2a_hub"

#: The layers of docs/architecture.md §1, highest first, as top-level names of the package
#: ("" is the root package itself). A module may import its own layer or a lower one.
LAYERS: tuple[tuple[str, ...], ...] = (
    # the public face: names exported lazily from every part; `python -m a2a_hub`
    ("", "__main__"),
    ("cli", "scenarios"),
    ("server",),
    ("push", "registry", "workers"),
    # agents/ uses client/ (remote agents, remote children of composites)
    ("agents", "llm", "tools"),
    ("client",),
    ("engine",),
    ("stores",),
    # recorded by every layer above
    ("metrics", "tracing"),
    # netpolicy: the outbound address policy every layer that calls out uses
    ("settings", "netpolicy", "_backoff", "_logging", "_render", "_version"),
    ("protocol",),
)


def layer_of(module: str) -> int:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else ""
    for depth, members in enumerate(LAYERS):
        if top in members:
            return depth
    raise LookupError(f"{module} is in no layer: add {PACKAGE}.{top} to LAYERS (and to §1)")


def packages_above(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def import_graph() -> dict[str, dict[str, str]]:
    """Module -> each module of the package that importing it runs -> where (see above)."""
    graph = grimp.build_graph(PACKAGE, cache_dir=None)
    edges: dict[str, dict[str, str]] = {}
    for module in graph.modules:
        imported: dict[str, str] = {}
        for target in sorted(graph.find_modules_directly_imported_by(module)):
            lines = sorted(
                d["line_number"] for d in graph.get_import_details(importer=module, imported=target)
            )
            imported[target] = "line " + ", ".join(map(str, lines))
            for package in packages_above(target) - packages_above(module) - {module}:
                imported.setdefault(package, f"importing {target}")
        edges[module] = imported
    return edges


def strongly_connected(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Tarjan's components (iterative), each sorted; the graph is small."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work: list[tuple[str, Iterable[str]]] = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component: list[str] = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    found.append(sorted(component))
    return sorted(found)


@pytest.fixture(scope="module")
def edges() -> dict[str, dict[str, str]]:
    return import_graph()


def test_the_graph_sees_imports_in_functions_and_under_type_checking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the circle check means nothing if these are missed
    package = tmp_path / "circled"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text("def f():\n    from circled import high\n")
    (package / "high.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from circled.low import f\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("circled", cache_dir=None)
    assert graph.find_modules_directly_imported_by("circled.low") == {"circled.high"}
    assert graph.find_modules_directly_imported_by("circled.high") == {"circled.low"}


def test_circles_and_packages_above() -> None:
    graph = {"m": {"n"}, "n": {"o"}, "o": {"m"}, "p": {"m"}}
    assert strongly_connected(graph) == [["m", "n", "o"], ["p"]]
    assert packages_above("a2a_hub.server.grpc.servicer") == {
        "a2a_hub",
        "a2a_hub.server",
        "a2a_hub.server.grpc",
    }


def test_no_import_circle(edges: dict[str, dict[str, str]]) -> None:
    circles = [c for c in strongly_connected(edges) if len(c) > 1]
    report = [
        "  "
        + ", ".join(circle)
        + "\n"
        + "".join(
            f"      {a} -> {b} ({where})\n"
            for a in circle
            for b, where in edges[a].items()
            if b in circle
        )
        for circle in circles
    ]
    if circles:
        pytest.fail("import circles:\n" + "\n".join(report), pytrace=False)


def test_every_module_is_in_a_layer(edges: dict[str, dict[str, str]]) -> None:
    unplaced = []
    for module in sorted(edges):
        try:
            layer_of(module)
        except LookupError as exc:
            unplaced.append(f"  {exc}")
    if unplaced:
        pytest.fail("modules in no layer:\n" + "\n".join(unplaced), pytrace=False)


def test_no_upward_import(edges: dict[str, dict[str, str]]) -> None:
    upward = [
        f"  {a} -> {b} ({where})"
        for a, targets in sorted(edges.items())
        for b, where in targets.items()
        if layer_of(b) < layer_of(a)
    ]
    if upward:
        pytest.fail(
            "upward imports (layers of docs/architecture.md §1):\n" + "\n".join(upward),
            pytrace=False,
        )
