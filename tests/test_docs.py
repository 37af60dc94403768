"""The README and docs/: every page's Python examples run as written, in order, and print what
the page says; every page is on the map and every relative link reaches a file."""

import contextlib
import io
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
        "[[6 8]\n [3 4]]", "2 4 4", "7179 4 True"],
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
