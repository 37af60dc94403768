"""An output folder that appears complete or not at all.

``OutputDir(path)`` checks at once that ``path`` can be written (so a bad ``--out`` fails before
a long run), collects the files in a hidden temporary folder beside it, and only on ``commit``
moves them into ``path`` (a rename of the whole folder when ``path`` did not exist, else one
rename per file). Used as a context manager it commits on success and removes the temporary
folder on any error, so a failed command leaves no partial files.
"""

import os
import shutil
import tempfile

from npusim.errors import NpusimError


class OutputDir:
    """Files for ``path``, written to a temporary folder first."""

    def __init__(self, path):
        self.path = os.path.abspath(os.fspath(path))
        base = _writable_ancestor(os.fspath(path), self.path)
        try:
            self.tmp = tempfile.mkdtemp(prefix=".npusim-", dir=base)
        except OSError as exc:
            raise NpusimError(f"cannot write to {path}: {exc.strerror or exc}") from None
        self.shown = os.fspath(path)

    def file(self, name: str) -> str:
        """The temporary path to write ``name`` to."""
        return os.path.join(self.tmp, name)

    def commit(self) -> str:
        """Move the files into place; return the folder."""
        try:
            _open_up(self.tmp)
            if not os.path.exists(self.path):
                os.makedirs(os.path.dirname(self.path), exist_ok=True)
                os.rename(self.tmp, self.path)
                return self.path
            for name in sorted(os.listdir(self.tmp)):
                os.replace(os.path.join(self.tmp, name), os.path.join(self.path, name))
            os.rmdir(self.tmp)
        except OSError as exc:
            self.discard()
            raise NpusimError(f"cannot write to {self.shown}: {exc.strerror or exc}") from None
        return self.path

    def discard(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is None:
            self.commit()
        else:
            self.discard()
        return False


def _open_up(folder: str) -> None:
    """Give the folder and its files the modes the user's umask asks for (temporary files are
    created private)."""
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(folder, 0o777 & ~mask)
    for name in os.listdir(folder):
        os.chmod(os.path.join(folder, name), 0o666 & ~mask)


def _writable_ancestor(shown: str, path: str) -> str:
    """The nearest existing folder at or above ``path``, checked writable."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise NpusimError(f"cannot write to {shown}: it exists and is not a folder")
    base = path
    while not os.path.exists(base):
        base = os.path.dirname(base)
    if not os.path.isdir(base):
        raise NpusimError(f"cannot write to {shown}: {base} is a file, not a folder")
    if not os.access(base, os.W_OK | os.X_OK):
        raise NpusimError(f"cannot write to {shown}: {base} is not writable")
    return base
