"""The house's layers: imports point one way, and no module circles back (shared/DESIGN.md).

The imports are read with ``ast`` from the source, every one of them, a function's lazy import
included (a circle through a lazy import is still a circle), and each is resolved to the module
it names: ``from npusim.engine import launch`` is the module ``npusim.engine.launch``, ``from
npusim.errors import NpusimError`` the module ``npusim.errors``. ``isa/``, ``ops/`` and
``models/`` are read as ``npusim.isa``, ``npusim.ops`` and ``npusim.models``, as they install.

Layers, lowest first: (1) the shared data types at the top of ``npusim/``; (2) the instruction
set; (3) the engine and the kernel DSL; (4) the operators and the engine's micro-kernels; (5)
the user-facing layer: the operator registry, the studies, the aclnn API, the goldens, the face
and the package's own ``__init__`` (which reaches the studies lazily). A module imports only
from its own layer or below.
"""

import ast
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
TREES = {"npusim": "npusim", "isa": "npusim.isa", "ops": "npusim.ops", "models": "npusim.models"}
LAYERS = [  # (layer, module prefixes); the longest prefix that matches decides
    (1, ("npusim.errors", "npusim.chip", "npusim.dtypes", "npusim.models")),
    (2, ("npusim.isa",)),
    (3, ("npusim.engine", "npusim.dsl")),
    (4, ("npusim.ops", "npusim.micro")),
    (5, ("npusim", "npusim.cases", "npusim.studies", "npusim.aclnn", "npusim.golden",
         "npusim.face")),
]
ROOMS = ["engine", "face", "cases", "studies", "dsl", "golden", "aclnn", "micro"]


def modules() -> dict:
    """Dotted module name -> source file, for every module of the package as installed."""
    found = {}
    for tree, package in TREES.items():
        for path in sorted((ROOT / tree).rglob("*.py")):
            parts = list(path.relative_to(ROOT / tree).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def _named(module: str, node, mods: dict) -> set:
    """The package's modules that one import statement names."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in mods}
    base = node.module or ""
    if node.level:
        package = module if mods[module].name == "__init__.py" else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{base}".rstrip(".")
    out = set()
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        if sub in mods:
            out.add(sub)
        elif base in mods:
            out.add(base)
    return out


def import_graph() -> nx.DiGraph:
    mods = modules()
    graph = nx.DiGraph()
    for module, path in mods.items():
        graph.add_node(module)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in _named(module, node, mods) - {module}:
                    graph.add_edge(module, target, line=node.lineno)
    return graph


def layer(module: str) -> int:
    best = max((p for _, prefixes in LAYERS for p in prefixes
                if module == p or module.startswith(p + ".")), key=len)
    return next(n for n, prefixes in LAYERS if best in prefixes)


def test_the_walk_finds_the_rooms_and_their_imports():
    graph = import_graph()
    assert graph.number_of_nodes() > 120
    assert graph.has_edge("npusim.engine.launch", "npusim.engine.timed")
    assert graph.has_edge("npusim.face.cli", "npusim.errors")
    assert graph.has_edge("npusim.ops.silu.backward", "npusim.dsl")
    assert graph.has_edge("npusim.ops.convolution.backward", "npusim.ops.transdata.kernel")


def test_no_module_imports_from_a_higher_layer():
    graph = import_graph()
    upward = [f"{a} (layer {layer(a)}, line {d['line']}) imports {b} (layer {layer(b)})"
              for a, b, d in graph.edges(data=True) if layer(b) > layer(a)]
    assert not upward, "\n".join(upward)


def test_the_engine_imports_neither_face_studies_nor_ops():
    graph = import_graph()
    banned = ("npusim.face", "npusim.studies", "npusim.ops", "npusim.cases", "npusim.micro",
              "npusim.aclnn", "npusim.golden")
    bad = [(a, b) for a, b in graph.edges if a.startswith("npusim.engine")
           and (b == "npusim" or b.startswith(banned))]
    assert not bad, bad


def test_the_studies_reach_operators_only_through_the_registry():
    """sweep, predict, validate and correlate run points through ``npusim.cases``, never the
    engine, the kernels or the instructions directly (shared/DESIGN.md: one executor)."""
    graph = import_graph()
    banned = ("npusim.engine", "npusim.ops", "npusim.dsl", "npusim.isa", "npusim.micro")
    bad = [(a, b) for a, b in graph.edges if a.startswith("npusim.studies")
           and b.startswith(banned)]
    assert not bad, bad


# Which operator families an ``ops/`` family may import, beside ``ops.common``: the
# convolution launches TransData around its cube kernels (kernels.md §2(b)); matmul runs its GEMM
# on the CATLASS-shaped kernel of ops/catlass (reused, not copied); the (1, 1) adaptive average
# pool's backward runs aclnn's Fill on the elementwise template; the training series' max pool
# (aclnnMaxPool2dWithMask) runs TransData around its NC1HWC0 kernels.
FAMILY_USES = {"batch_norm": {"transdata"}, "convolution": {"transdata"}, "matmul": {"catlass"},
               "pooling": {"elementwise", "transdata"}}


def family(module: str) -> str | None:
    """``npusim.ops.convolution.tiling`` -> "convolution"; None outside a family package."""
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[:2] == ["npusim", "ops"] else None


def test_ops_has_one_package_per_family_and_families_keep_to_their_own():
    """``ops/`` holds packages, one per operator family, and ``ops/common/`` (issue 40); a
    family imports only itself, ``ops.common`` and the families ``FAMILY_USES`` names, and
    ``ops.common`` imports no family."""
    assert not [p.name for p in (ROOT / "ops").glob("*.py") if p.name != "__init__.py"]
    graph = import_graph()
    bad = []
    for a, b in graph.edges:
        fa, fb = family(a), family(b)
        if fa is None or fb is None or fa == fb or fb == "common":
            continue
        if fb not in FAMILY_USES.get(fa, set()):
            bad.append(f"{a} imports {b}")
    assert not bad, "\n".join(bad)


def test_no_ops_module_is_over_400_lines():
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "ops").rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 400}
    assert not long, long


def test_the_studies_are_one_package_per_study():
    """``npusim/studies/`` keeps its executor (and the executor's cache of points), and
    workloads at the top and one package per study: predict, sweep, validate (with correlate,
    calibration, bands and ranking)."""
    top = {p.stem for p in (ROOT / "npusim" / "studies").glob("*.py")}
    assert top == {"__init__", "executor", "cache", "workload"}, top
    for study in ("predict", "sweep", "validate"):
        assert (ROOT / "npusim" / "studies" / study / "__init__.py").is_file(), study
    assert family("npusim.ops.convolution.tiling") == "convolution"
    assert family("npusim.ops.convolution") is None


def test_no_import_circle():
    cycles = list(nx.simple_cycles(import_graph()))
    assert not cycles, "\n".join(" -> ".join([*c, c[0]]) for c in cycles[:20])


def test_a_circle_or_an_upward_import_would_be_found():
    """The checks above see what they look for: a graph with the old circle of report,
    fidelity, validate and executor has a cycle, and an engine module importing the face is
    upward."""
    graph = import_graph()
    graph.add_edge("npusim.cases.run", "npusim.face.report")
    assert any("npusim.face.report" in c for c in nx.simple_cycles(graph))
    assert layer("npusim.engine.launch") < layer("npusim.face.plot")


def test_no_module_at_the_top_is_over_400_lines_and_the_rooms_are_packages():
    top = [p for p in (ROOT / "npusim").glob("*.py")]
    assert {p.stem for p in top} <= {"__init__", "__main__", "errors", "chip", "dtypes"}
    long = {p.name: n for p in top if (n := len(p.read_text().splitlines())) > 400}
    assert not long, long
    for room in ROOMS:
        assert (ROOT / "npusim" / room / "__init__.py").is_file(), room


def test_the_package_uses_no_moved_path():
    """The old paths (``npusim.launch``, ``npusim.plot``, ...) are for users; the package
    itself imports the modules where they live."""
    from npusim import MOVED

    graph_text = [(m, p.read_text()) for m, p in modules().items()]
    used = [(m, old) for m, text in graph_text for old in MOVED
            if f"from {old} import" in text or f"import {old}\n" in text]
    assert not used, used


def test_the_old_import_paths_give_the_moved_modules():
    import npusim.engine.launch
    import npusim.engine.memory
    import npusim.face.plot
    import npusim.launch
    import npusim.memory
    from npusim import plot

    assert npusim.launch is npusim.engine.launch
    assert npusim.launch.__spec__.name == "npusim.engine.launch"
    assert npusim.memory.GlobalMemory is npusim.engine.memory.GlobalMemory
    assert plot is npusim.face.plot and callable(plot.pipeline)
    from npusim.golden.atomic import AtomicSum
    from npusim.launch import launch

    assert launch is npusim.engine.launch.launch and AtomicSum


@pytest.mark.parametrize("module", ["npusim", "npusim.cli"])
def test_python_dash_m_runs_the_command(module, tmp_path):
    out = subprocess.run([sys.executable, "-m", module, "chips"], capture_output=True,
                         text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("chip ") and "atlas-a2" in out.stdout


def test_every_room_installs_and_imports_from_the_wheel(tmp_path):
    """``pip install .`` ships every sub-package: the wheel built from the tree holds each
    room, and each imports from the unpacked wheel alone (run away from the tree)."""
    src = tmp_path / "src"    # a copy: setuptools builds in the tree it is given
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", ".*cache", ".hypothesis", "*venv"))
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                            "--no-build-isolation", "-w", str(tmp_path / "wheel"), str(src)],
                           capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    wheel = next((tmp_path / "wheel").glob("npusim-*.whl"))
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    packages = sorted(m for m, p in modules().items() if p.name == "__init__.py")
    code = ("import importlib, sys; mods = sys.argv[1:]; "
            "[importlib.import_module(m) for m in mods]; import npusim; print(npusim.__file__)")
    env = dict(os.environ, PYTHONPATH=str(site))
    out = subprocess.run([sys.executable, "-c", code, *packages], capture_output=True,
                         text=True, cwd=tmp_path, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().startswith(str(site)), out.stdout
