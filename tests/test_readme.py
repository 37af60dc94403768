"""The README's Python examples run as written, in order, and print what the README says."""

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_readme_python_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    out = io.StringIO()
    blocks = python_blocks()
    assert len(blocks) >= 5
    with contextlib.redirect_stdout(out):
        for block in blocks:
            exec(compile(block, str(README), "exec"), namespace)  # noqa: S102
    printed = out.getvalue()
    # the values the README shows next to its prints
    assert "6495 6.495" in printed
    assert "{'UB': 106496}" in printed
    assert "'gradInput': (2, 32, 28, 28)" in printed
    assert "[('Conv2DBackpropInput', 14, 7436), ('TransData(gradInput)', 4, 5745)]" in printed
    assert "0 [0.92767054 1.0907843  1.0881041  1.0526646  1.0265474  1.0123262 ] 3359" in printed
    assert "161002 aclnnSiluBackward: gradOutput dtype int32" in printed
    assert "[[-0.00909424  0.04101562  0.04101562]" in printed and "32 2 4688" in printed
    assert ("small_dim 13878 ['ZerosLike(out)', 'Cast(indices)', 'EmbeddingDenseGradV2']"
            in printed)
    assert "[[6 8]\n [3 4]]" in printed and "2 4 4" in printed
    assert "[98. 98. 98. 98.] 33905 10240" in printed and "161002 aclnnConvolutionBackward: " \
        "cubeMathType = 0" in printed
    assert printed.count("True") >= 1 and (tmp_path / "silu.json").stat().st_size > 0
