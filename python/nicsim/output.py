"""Output folders, written atomically.

Every command that produces results writes one folder. [`OutputDir`] builds it in a hidden
temporary folder next to the target and renames it into place when the block ends without an
error (replacing an existing folder of that name); an error or Ctrl-C inside the block leaves
the target as it was and nothing half-written. Helpers write JSON (sorted keys, indent 2, so
equal results are equal bytes), CSV tables and matplotlib figures (PNG and SVG).
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nicsim.errors import InputError


class OutputDir:
    """`with OutputDir("out/run") as o: o.json("summary.json", s)` — all files or none."""

    def __init__(self, target: str | os.PathLike[str]) -> None:
        self.target = Path(target)
        self.path: Path | None = None

    def __enter__(self) -> OutputDir:
        if self.target.exists() and not self.target.is_dir():
            raise InputError(f"{self.target}: exists and is not a folder")
        parent = self.target.absolute().parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
            self.path = Path(tempfile.mkdtemp(prefix=f".{self.target.name}.tmp-", dir=parent))
        except OSError as e:
            raise InputError(f"{e.filename or parent}: cannot create the output folder: {e.strerror}") from None
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(self.path, 0o777 & ~umask)
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        assert self.path is not None
        if exc_type is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            return
        try:
            self._commit()
        except BaseException:
            shutil.rmtree(self.path, ignore_errors=True)
            raise

    def _commit(self) -> None:
        assert self.path is not None
        target = self.target.absolute()
        old = None
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent)) / "old"
            os.replace(target, old)
        os.replace(self.path, target)
        if old is not None:
            shutil.rmtree(old.parent, ignore_errors=True)

    def file(self, name: str) -> Path:
        """Where to write `name` (inside the temporary folder until the block ends)."""
        assert self.path is not None, "use OutputDir in a with block"
        p = self.path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def text(self, name: str, text: str) -> Path:
        p = self.file(name)
        p.write_text(text, encoding="utf-8")
        return p

    def json(self, name: str, obj: Any) -> Path:
        """JSON with sorted keys and indent 2; non-finite numbers become null."""
        return self.text(name, json.dumps(_finite(obj), sort_keys=True, indent=2, allow_nan=False, ensure_ascii=False) + "\n")

    def csv(self, name: str, rows: Iterable[Mapping[str, Any]], columns: Sequence[str] | None = None) -> Path:
        """A CSV table; columns default to the keys of the rows in first-seen order. Lists and
        tables are written as JSON, None as an empty cell."""
        rows = list(rows)
        if columns is None:
            columns = list(dict.fromkeys(k for r in rows for k in r))
        p = self.file(name)
        with p.open("w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(columns)
            for r in rows:
                w.writerow([_cell(r.get(c)) for c in columns])
        return p

    def figure(self, stem: str, fig: Any, dpi: int = 150) -> tuple[Path, Path]:
        """Save a matplotlib figure as STEM.png and STEM.svg (reproducible bytes) and close it."""
        import matplotlib
        import matplotlib.pyplot as plt

        png, svg = self.file(stem + ".png"), self.file(stem + ".svg")
        fig.savefig(png, dpi=dpi, bbox_inches="tight", metadata={"Software": None})
        with matplotlib.rc_context({"svg.hashsalt": "nicsim"}):
            fig.savefig(svg, bbox_inches="tight", metadata={"Date": None, "Creator": None})
        plt.close(fig)
        return png, svg


def _cell(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, list | tuple | dict):
        return json.dumps(v, separators=(",", ":"))
    return v


def _finite(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_finite(x) for x in v]
    return v
