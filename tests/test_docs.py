"""The README and docs/: every page's Python examples run as written, in order, and print what
the page says; every page is on the map and every relative link reaches a file."""

import contextlib
import importlib.util
import io
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

# page -> what its examples print (the values the page shows next to its prints)
PRINTS = {
    "docs/guide/run-and-compare.md": [
        "[98. 98. 98. 98.] 49493 10240",
        "161002 aclnnConvolutionBackward: cubeMathType = 0"],
    "docs/guide/operators.md": [
        "[[-0.00909424  0.04101562  0.04101562]", "32 2 3132",
        "small_dim 8537 ['ZerosLike(out)', 'Cast(indices)', 'EmbeddingDenseGradV2']",
        "[[6 8]\n [3 4]]", "2 4 4",
        "[[0.   0.   2.   3.25]] [[0. 0. 1. 1.]] [[-2.25   0.     3.     4.875]]",
        "['Relu', 'ReluGrad', 'Axpy'] 6911", "column 27864 True",
        "[[ 1.5  5.5  9.5]\n [13.5 17.5 21.5]] [[0.25, 0.25], [0.25, 0.25]]",
        "['Fill', 'Mul'] 4 96", "7179 4 True",
        "[ 7.5 11.5 15.5] [0.75      1.15      1.5500001] ['TransData(input)', "
        "'BNTrainingReduce', 'BNTrainingUpdate', 'TransData(output)']",
        "[8. 8. 8.] True", "[[5.0, 7.0], [13.0, 15.0]] [[5, 7], [13, 15]]"],
    "docs/guide/python-api.md": [
        "8459 8.459", "{'UB': 106496}", "'gradInput': (2, 32, 28, 28)",
        "[('Conv2DBackpropInput', 14, 12694), ('TransData(gradInput)', 4, 9434)]",
        "0 [0.92767054 1.0907843  1.0881041  1.0526646  1.0265474  1.0123262 ] 6958",
        "161002 aclnnSiluBackward: gradOutput dtype int32", "True"],
    "docs/contributing.md": [],
    "docs/guide/kernel-api.md": [
        "True 3140 ['aiv0', 'aiv1', 'aiv2', 'aiv3']", "3140 1.74 timed", "{'UB': 20480}",
        "2176 True"],
    "docs/guide/critical-path.md": [
        "1 49826 V 57% True", "[('V', 28624), ('GM bandwidth', 12604), ('launch', 7195)]",
        "2 37834 V 74% True", "[('V 2x faster', 36042), ('V free', 36042)]"],
}
WRITES = {"docs/guide/python-api.md": ["silu.json", "run.json", "pipeline.png", "memory.png"]}


def pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(), re.S)


@pytest.mark.parametrize("name", sorted(PRINTS))
def test_page_python_examples_run_and_print_what_the_page_says(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    page = ROOT / name
    namespace: dict = {}
    out = io.StringIO()
    blocks = python_blocks(page)
    assert blocks, f"{name} has no Python example"
    with contextlib.redirect_stdout(out):
        for block in blocks:
            exec(compile(block, str(page), "exec"), namespace)  # noqa: S102
    printed = out.getvalue()
    for text in PRINTS[name]:
        assert text in printed, (name, text)
    for written in WRITES.get(name, []):
        assert (tmp_path / written).stat().st_size > 0, (name, written)


def test_every_page_with_python_examples_is_held_here():
    held = {str(p.relative_to(ROOT)) for p in pages() if python_blocks(p)}
    assert held == set(PRINTS), held ^ set(PRINTS)


def _links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in t]


def test_every_relative_link_reaches_a_file_and_every_page_is_on_the_map():
    broken = []
    for page in pages():
        for target in _links(page):
            path = target.split("#")[0]
            if path and not (page.parent / path).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, broken
    mapped = {(DOCS / t.split("#")[0]).resolve() for t in _links(DOCS / "README.md")}
    unmapped = [p for p in DOCS.rglob("*.md") if p != DOCS / "README.md" and p not in mapped]
    assert not unmapped, unmapped
    assert "docs/README.md" in README.read_text()


def test_the_readme_is_a_front_page():
    text = README.read_text()
    assert len(text.splitlines()) <= 300
    quick = text.split("## Quick start", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    assert quick.splitlines() == ['pip install . && npusim demo',
                                  'pip install ".[test]" && pytest']


def test_the_readme_says_how_to_get_the_cpu_torch_wheel():
    readme = (ROOT / "README.md").read_text()
    assert "--index-url https://download.pytorch.org/whl/cpu" in readme
    assert 'pip install . && npusim demo\npip install ".[test]" && pytest\n' in readme


def test_no_page_calls_a_small_map_resnet50s_stem_shape():
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        assert "stem shape" not in page.read_text(), page


def _pastes_module():
    spec = importlib.util.spec_from_file_location("pastes", DOCS / "pastes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PASTES = _pastes_module()
SLOW = os.environ.get("NPUSIM_SLOW") == "1"
ALL_PASTES = [p for page in PASTES.pages() for p in PASTES.pastes(page)]


@pytest.mark.parametrize("paste", [p for p in ALL_PASTES if SLOW or not p.slow],
                         ids=lambda p: f"{p.page.relative_to(ROOT)}: {p.command[:60]}")
def test_every_pasted_command_prints_what_the_page_shows(paste):
    """Each pasted ``$ npusim ...`` block is what the command prints now (wall-clock figures
    aside); ``python docs/pastes.py --write`` regenerates a page that drifted. Blocks marked
    slow run with NPUSIM_SLOW=1."""
    printed = PASTES.run(paste.command)
    assert not PASTES.differs(paste, printed), "\n".join(
        [f"{paste.page.relative_to(ROOT)}: $ {paste.command}", "page:", *paste.shown,
         "printed:", *PASTES.excerpt(paste.shown, printed)])


def test_the_paste_check_finds_a_stale_block_and_rewrites_it(tmp_path):
    """The checker is not blind: a block with a wrong line differs, an elided one keeps its
    cut, a wall time is not compared, and --write puts what the command printed."""
    page = tmp_path / "page.md"
    page.write_text("```text\n$ npusim chips\nchip nobody\n...\n```\n")
    (paste,) = PASTES.pastes(page)
    printed = PASTES.run(paste.command)
    assert printed[0].startswith("chip ") and PASTES.differs(paste, printed)
    assert PASTES.rewrite(page, {paste.command: printed})
    (again,) = PASTES.pastes(page)
    assert again.shown == [printed[0], "..."] and not PASTES.differs(again, printed)
    timed = PASTES.Paste(page, "npusim x", ["took 4.3 s"], False)
    assert not PASTES.differs(timed, ["took 49 s"]) and PASTES.differs(timed, ["took 49 us"])
    made = PASTES.Paste(page, "npusim x", ["on 2026-11-27 18:38 UTC; chip files: atlas-a2 "
                                           "(/work/main/models/atlas-a2.toml) sha256 d95c"], False)
    assert not PASTES.differs(made, ["on 2026-11-28 01:02 UTC; chip files: atlas-a2 "
                                     "(/tmp/clone/models/atlas-a2.toml) sha256 d95c"])
    assert PASTES.differs(made, ["on 2026-11-28 01:02 UTC; chip files: atlas-a2 "
                                 "(/tmp/clone/models/atlas-a2.toml) sha256 0000"])


def test_every_page_with_a_command_block_is_checked():
    """Every ``$ npusim`` line of a text block on any page is one of the pastes checked (a
    block the parser missed would go unchecked)."""
    lines = [line for page in PASTES.pages()
             for block in re.findall(r"```text\n(.*?)```", page.read_text(), re.S)
             for line in block.splitlines() if line.startswith("$ npusim")]
    assert len(lines) == len(ALL_PASTES) > 20


def _options(parser) -> dict:
    """command -> the long options its parser (and, for an operator command, the first
    operator's parser) takes."""
    import argparse

    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                opts = {o for a in sub._actions for o in a.option_strings if o.startswith("--")}
                for inner in sub._actions:
                    if isinstance(inner, argparse._SubParsersAction):
                        first = next(iter(inner.choices.values()))
                        opts |= {o for a in first._actions for o in a.option_strings
                                 if o.startswith("--")}
                found[name] = opts - {"--help"}
    return found


def test_the_commands_page_names_every_option_of_every_command():
    """docs/guide/commands.md's synopsis lists each command with every option its parser
    takes, so a new flag cannot be left out of the page."""
    from npusim.face.cli import _parser

    page = (DOCS / "guide" / "commands.md").read_text()
    synopsis = page.split("```bash\n", 1)[1].split("```", 1)[0]
    entries = re.split(r"\n(?=npusim )", synopsis)
    missing = []
    for command, opts in _options(_parser()).items():
        text = " ".join(e for e in entries if e.startswith(f"npusim {command} "))
        if command in ("run", "compare", "sweep") and "[same options]" in text:
            text += " ".join(e for e in entries if e.startswith("npusim run "))
        missing += [f"{command} {o}" for o in sorted(opts) if o not in text]
    assert not missing, missing


def test_the_readme_step_excerpt_is_from_the_predict_guides_paste():
    """README's tour quotes lines of the step prediction; each is in docs/guide/predict.md's
    paste of that command, which the slow paste check holds to the code."""
    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text(encoding="utf-8")
    guide = (root / "docs" / "guide" / "predict.md").read_text(encoding="utf-8")
    start = readme.index("From its output")
    opening = readme.index("```text\n", start) + 8
    block = readme[opening:readme.index("\n```", opening)]
    paste = guide[guide.index("$ npusim predict resnet50-train-step --jobs 2"):]
    paste = paste[:paste.index("```")]
    assert block.splitlines() and all(line in paste.splitlines() for line in block.splitlines())
