"""Numbers a page quotes from the code, held against what the code prints now.

A page marks each quoted number where it stands, invisibly on GitHub:
``<!--q:silu_double_cycles-->9,108<!--/q--> cycles``. The script that produces it prints a line
``silu_double_cycles = 9,108``. :func:`drift` lists every marked number the output contradicts
or does not give, so a test fails when the code moves and the page does not.
"""

import re

MARK = re.compile(r"<!--q:([\w.-]+)-->(.*?)<!--/q-->", re.S)
LINE = re.compile(r"^\s*([\w.-]+) = (.+?)\s*$", re.M)


def quoted(page_text: str) -> dict[str, str]:
    """The page's marked numbers, key -> the text shown."""
    return {key: value.strip() for key, value in MARK.findall(page_text)}


def produced(output: str) -> dict[str, str]:
    """The ``key = value`` lines a script printed."""
    return dict(LINE.findall(output))


def drift(page_text: str, output: str) -> list[str]:
    """One line per marked number that differs from, or is missing in, the output."""
    now = produced(output)
    return [f"{key}: page says {shown!r}, code gives {now.get(key, 'nothing')!r}"
            for key, shown in quoted(page_text).items() if now.get(key) != shown]
