"""Output folders: written atomically, and never at the cost of a user's data.

Every command that produces results writes one folder. [`OutputDir`] builds it in a hidden
temporary folder next to the target (`.NAME.tmp-PID-XXXX`) and renames it into place when the
block ends without an error; an error, Ctrl-C or SIGTERM inside the block removes the temporary
folder and leaves the target as it was.

A command deletes or replaces only what it wrote itself, and never what is not a regular file
or a folder nicsim wrote, `--force` or not: a device (`/dev/full`), a FIFO, a socket, or a
symbolic link to one is refused, as is a folder that holds one ([`check_output_file`] for the
commands that write one file: `flowmem synth`, `xdp calibrate`). Every output folder holds a marker,
`.nicsim-output` (JSON: the nicsim version, the command line and the files nicsim wrote there),
and an existing `--out` folder is replaced only when it is empty, or holds that marker and no
file that the marker does not list. Any other folder is refused ([`OutputRefused`], exit 2)
unless `force=True` (`--force`). Even with `force`, these are never replaced:

- the working directory or any folder above it, `/` and the home folder;
- a folder that holds a git repository (a `.git` anywhere inside);
- a folder that holds one of the command's own inputs (its configuration, capture or object).

The checks run before the command starts (so a refusal costs nothing) and again just before the
rename. Debris of a run that was killed (`.NAME.tmp-PID-*` and `.NAME.old-PID-*` folders whose
process is gone on this host) is removed the next time the same `--out` is used.

Beside the marker, `provenance.json` says how the results came to be: the command line, the
nicsim version and (run from a checkout) its git commit, the inputs' sizes and SHA-256, the
configuration's hash, the host and the time. `summary.json` ([`OutputDir.summary`]) carries only
`nicsim_version` and `schema_version` of these, so that equal results stay equal bytes.

Helpers write JSON (sorted keys, indent 2), CSV tables, Parquet tables and matplotlib figures
(PNG; SVG and PDF as well when `--figures` or `$NICSIM_FIGURES` asks for them).

Results first, pictures second: a command writes summary.json and its tables, then its figures
and other secondary outputs inside [`OutputDir.optional`], where a failure (a plot matplotlib
refuses, a full disk while drawing) is a one-line warning naming the files not written; the
results are kept and the exit code is unchanged.
"""

from __future__ import annotations

import csv
import datetime
import errno
import fcntl
import hashlib
import json
import math
import os
import platform
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from nicsim.errors import InputError

#: The marker file every output folder holds.
MARKER = ".nicsim-output"
#: The version of the layout of summary.json (docs/summary-schema.md): raised when a key moves
#: or changes meaning. 2: every summary is a table carrying nicsim_version and schema_version
#: (a sweep's points moved under `points`). 3: the router's `fifos.<name>` take the keys every
#: model's FIFOs have (the kernel's `FifoSummary`: `capacity_bytes`, or `capacity_packets` for a
#: ring of descriptors, `mean_bytes`, `max_bytes`, `mean_packets`, `max_packets`, `arrivals`,
#: `departures`, `littles_law`) in place of `capacity`, `max` and `mean`.
SCHEMA_VERSION = 3


class OutputRefused(InputError):
    """`--out` names a folder that nicsim may not replace."""


def command_line() -> list[str]:
    """The command line as the user typed it (`nicsim ...`, also under `python -m nicsim`)."""
    return ["nicsim", *sys.argv[1:]]


def check_out_arg(value: str | os.PathLike[str]) -> Path:
    """An `--out` value as a path; the empty string is refused (it would mean the working
    directory)."""
    if os.fspath(value) == "":
        raise OutputRefused("--out: the output folder is an empty path; give a folder name (e.g. --out out/run)")
    return Path(value)


def _real(p: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(p))


def _is_within(inner: Path, outer: Path) -> bool:
    """Whether `inner` is `outer` or inside it (both absolute)."""
    return inner == outer or outer in inner.parents


def _both(p: str | os.PathLike[str]) -> set[Path]:
    """A path as given (made absolute) and as resolved: a symbolic link lives in one folder and
    points into another, and both hold it."""
    return {Path(os.path.abspath(p)), _real(p)}


def _inside(inner: str | os.PathLike[str], outer: str | os.PathLike[str]) -> bool:
    return any(_is_within(i, o) for i in _both(inner) for o in _both(outer))


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists on this host (another user's too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, as another user's
        return True
    return True


#: The largest marker read (one listing 100,000 stream files is about 3 MB).
MAX_MARKER_BYTES = 64 << 20


def _read_marker(folder: Path) -> dict[str, Any] | None:
    """The marker of a folder nicsim wrote, or None: a regular file (not a link, pipe or
    device) of JSON whose `files` is a list of names."""
    p = folder / MARKER
    try:
        if not stat.S_ISREG(os.lstat(p).st_mode):
            return None
        with p.open("rb") as f:
            m = json.loads(f.read(MAX_MARKER_BYTES + 1).decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not (isinstance(m, dict) and isinstance(m.get("files", []), list)
            and all(isinstance(x, str) for x in m.get("files", []))):
        return None
    return m


def file_kind(mode: int) -> str:
    """What a file is, for a message: "a folder", "a character device", ..."""
    for test, kind in ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"),
                       (stat.S_ISREG, "a regular file")):
        if test(mode):
            return kind
    return "not a regular file"


def check_output_file(path: str | os.PathLike[str]) -> None:
    """Raise [`OutputRefused`] unless the one file a command writes may be replaced: it is
    absent, or a regular file (`--force` decides beyond that). A device, FIFO, socket or
    folder is never replaced, nor a symbolic link (it would be replaced, not what it names)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as e:
        raise OutputRefused(f"{path}: cannot see it ({e.strerror}); give another file name") from None
    if stat.S_ISREG(st.st_mode):
        return
    kind = file_kind(st.st_mode)
    if stat.S_ISLNK(st.st_mode):
        try:
            kind += f" to {file_kind(os.stat(path).st_mode)}"
        except OSError:
            kind += " to nothing"
    raise OutputRefused(f"{path}: is {kind}; nicsim replaces only regular files, even with --force "
                        "(give another file name)")


def _special_under(folder: Path) -> str | None:
    """The first device, FIFO or socket under `folder` (relative path and kind), or None:
    replacing the folder would remove it."""
    for root, _dirs, files in os.walk(folder, onerror=_raise):
        for name in files:
            mode = os.lstat(os.path.join(root, name)).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
                return f"{os.path.relpath(os.path.join(root, name), folder)} ({file_kind(mode)})"
    return None


def _raise(e: OSError) -> None:
    raise e


def _files_under(folder: Path) -> Iterable[str]:
    """Relative paths of the files (and empty folders) under `folder`, symbolic links
    included as files, not followed. A part that cannot be listed raises (it may hold files)."""
    for root, dirs, files in os.walk(folder, onerror=_raise):
        rel = os.path.relpath(root, folder)
        for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            yield name if rel == "." else os.path.join(rel, name)
        if not files and not dirs and rel != ".":
            yield rel + os.sep


def _is_git_dir(path: str | os.PathLike[str]) -> bool:
    """A git repository's own folder: `.git`, or a bare repository (HEAD, objects, refs)."""
    p = Path(path)
    return p.name == ".git" or ((p / "HEAD").is_file() and (p / "objects").is_dir() and (p / "refs").is_dir())


def _holds_git(folder: Path) -> Path | None:
    """The first git repository in or around `folder`: the folder inside one (`repo/.git/x`),
    or one anywhere under it (a `.git`, or a bare repository)."""
    for p in [folder, *folder.parents]:
        if _is_git_dir(p):
            return p
    for root, dirs, files in os.walk(folder, onerror=_raise):
        if ".git" in dirs or ".git" in files:
            return Path(root) / ".git"
        if _is_git_dir(root):
            return Path(root)
    return None


class OutputDir:
    """`with OutputDir("out/run") as o: o.json("summary.json", s)` — all files or none.

    `inputs`: the files the command reads; a folder that holds one is never replaced.
    `force`: replace an existing folder that nicsim did not write (within the limits above).
    """

    def __init__(self, target: str | os.PathLike[str], *, inputs: Iterable[str | os.PathLike[str] | None] = (),
                 force: bool = False, config: Mapping[str, Any] | None = None) -> None:
        self.given = check_out_arg(target)
        self.inputs = [Path(i) for i in inputs if i is not None and os.fspath(i) not in ("", "-")]
        self.inputs.append(Path(__file__).resolve().parent)  # nicsim itself: its configs, targets, programs
        self.force = force
        self.config = config
        self.started = _now()
        self.path: Path | None = None
        absolute = Path(os.path.abspath(self.given))
        # A symbolic link to a folder is followed: the link stays, the folder behind it is written.
        self.target = _real(absolute) if absolute.is_symlink() else absolute
        self._made: list[Path] = []

    # -- the checks ---------------------------------------------------------------------------

    def _refuse(self, why: str) -> OutputRefused:
        return OutputRefused(f"{self.given}: {why}")

    def check(self) -> None:
        """Raise [`OutputRefused`] unless the target may be (re)written."""
        t = self.target
        given = os.path.abspath(self.given)
        if os.path.islink(given) and not os.path.exists(given):
            raise self._refuse("is a symbolic link to nothing; give another --out")
        cwd = os.getcwd()
        if _inside(cwd, t) or _inside(os.environ.get("PWD") or cwd, t):
            where = "the working directory" if _both(cwd) & _both(t) else "a folder above the working directory"
            raise self._refuse(f"is {where}; nicsim never replaces it (give a new folder, e.g. --out out/run)")
        if _both(t) & (_both("/") | _both(Path.home())):
            raise self._refuse("is the root or home folder; nicsim never replaces it (give a new folder)")
        for i in self.inputs:
            if _inside(i, t):
                raise self._refuse(f"holds the input {i}; nicsim never replaces it (give another --out)")
        if not t.exists():
            self._check_creatable()
            return
        if not t.is_dir():
            try:
                kind = file_kind(os.stat(t).st_mode)
            except OSError:
                kind = "a regular file"
            if kind == "a regular file":
                raise self._refuse("exists and is not a folder; give another --out")
            raise self._refuse(f"exists and is {kind}, not a folder; nicsim never replaces it, even with --force "
                               "(give another --out)")
        if os.path.ismount(t):
            raise self._refuse("is a mount point; nicsim cannot replace it (give a folder inside it)")
        marker = _read_marker(t)
        listed = set(marker.get("files", [])) | {MARKER} if marker else set()
        foreign = []
        try:
            for f in _files_under(t):
                if f not in listed and not f.endswith(os.sep):
                    foreign.append(f)
                    if len(foreign) > 3 and not self.force:
                        break
            git = _holds_git(t)
            special = _special_under(t)
        except OSError as e:
            raise self._refuse(f"cannot see all of it ({e.filename or t}: {e.strerror}), so nicsim does not "
                               "replace it; give another --out") from None
        if foreign and not self.force:
            shown = ", ".join(sorted(foreign)[:3]) + (" and more" if len(foreign) > 3 else "")
            what = "is a folder nicsim did not write" if marker is None else "holds files nicsim did not write"
            raise self._refuse(f"{what} ({shown}); give another --out, or --force to replace it")
        if git is not None:
            raise self._refuse(f"holds a git repository ({git}); nicsim never replaces it, even with --force")
        if special is not None:
            raise self._refuse(f"holds {special}, which is not a regular file; nicsim never replaces it, even "
                               "with --force (give another --out)")

    def _check_creatable(self) -> None:
        """The folder can be made: its nearest existing ancestor is a folder where a folder can
        be created (tried, and removed at once), so that a long command does not find out at
        its end."""
        a = self.target.parent
        while not os.path.lexists(a) and a != a.parent:
            a = a.parent
        if not a.is_dir():
            raise self._refuse(f"cannot create the output folder: {a} is not a folder")
        try:
            shutil.rmtree(tempfile.mkdtemp(prefix=".nicsim-probe-", dir=a))
        except OSError as e:
            raise self._refuse(f"cannot create the output folder: {e.strerror}") from None

    # -- the folder's life --------------------------------------------------------------------

    def __enter__(self) -> OutputDir:
        self.check()
        parent = self.target.parent
        self._made = missing_parents(self.target)  # the folders above --out that this run creates
        try:
            make_parents(self.target)
            self._clean_stale(parent)
            self.path = Path(tempfile.mkdtemp(prefix=f".{self.target.name}.tmp-{os.getpid()}-", dir=parent))
        except OSError as e:
            raise InputError(f"{self.given}: cannot create the output folder: {e.strerror}") from None
        try:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(self.path, 0o777 & ~umask)
            self._write_marker()
        except OSError as e:  # a full disk: nothing is left behind, and the error names --out
            self._discard()
            raise InputError(f"{self.given}: cannot write the output folder: {e.strerror}") from None
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        assert self.path is not None
        if exc_type is not None:
            self._discard()
            if isinstance(exc, OSError) and self._is_write_error(exc):
                raise InputError(f"{self.given}: cannot write the output folder: {exc.strerror}") from None
            if type(exc) is InputError and str(self.path) in str(exc):
                # A file of the hidden temporary folder named by the core (a full disk while it
                # writes flow files): named as the user named the folder.
                raise InputError(str(exc).replace(str(self.path), str(self.given).rstrip(os.sep))) from None
            return
        try:
            self._write_provenance()
            self._write_marker()
            self._commit()
        except OSError as e:
            self._discard()
            raise InputError(f"{self.given}: cannot write the output folder: {e.strerror}") from None
        except BaseException:
            self._discard()
            raise

    def _discard(self) -> None:
        """Remove the temporary folder, and the folders above --out this run created (if empty)."""
        assert self.path is not None
        shutil.rmtree(self.path, ignore_errors=True)
        remove_empty(self._made)

    def _is_write_error(self, e: OSError) -> bool:
        """An error writing the folder (not reading an input): named after `--out`, not the
        hidden temporary folder."""
        in_tmp = e.filename is not None and self.path is not None and _is_within(_real(e.filename), _real(self.path))
        return in_tmp or e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS)

    def _write_marker(self) -> None:
        """The marker: who wrote the folder, and which files (so that a later run replaces only those)."""
        from nicsim import __version__

        assert self.path is not None
        files = sorted(f for f in _files_under(self.path) if f != MARKER and not f.endswith(os.sep))
        (self.path / MARKER).write_text(json.dumps({
            "nicsim_version": __version__, "command": command_line(),
            "host": socket.gethostname(), "pid": os.getpid(), "files": files,
        }, indent=1) + "\n", encoding="utf-8")

    def _write_provenance(self) -> None:
        from nicsim import __version__

        inputs = []
        for i in self.inputs:
            try:  # a pipe was read once, by the command: only files are hashed
                inputs.append({"path": str(i), "bytes": i.stat().st_size, "sha256": _sha256(i)} if i.is_file()
                              else {"path": str(i), "bytes": None, "sha256": None})
            except OSError:
                inputs.append({"path": str(i), "bytes": None, "sha256": None})
        config_sha = None
        if self.config is not None:
            canonical = json.dumps(_finite(dict(self.config)), sort_keys=True, separators=(",", ":"), default=str)
            config_sha = hashlib.sha256(canonical.encode()).hexdigest()
        self.json("provenance.json", {
            "command": command_line(), "cwd": os.getcwd(), "nicsim_version": __version__, "git": _git_commit(),
            "inputs": inputs, "config_sha256": config_sha, "host": socket.gethostname(),
            "python": platform.python_version(), "platform": platform.platform(),
            "started": self.started, "finished": _now(),
        })

    def _commit(self) -> None:
        """Check again and rename into place, holding a lock on the parent folder, so that
        runs writing the same --out at once replace each other's folder in turn."""
        assert self.path is not None
        target = self.target
        lock = os.open(target.parent, os.O_RDONLY)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self.check()
            old = None
            if target.exists():
                old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-{os.getpid()}-", dir=target.parent))
                os.replace(target, old)  # over the empty folder mkdtemp made
            try:
                os.replace(self.path, target)
            except BaseException:
                if old is not None:
                    os.replace(old, target)
                raise
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        finally:
            os.close(lock)  # releases the lock

    def _clean_stale(self, parent: Path) -> None:
        """Remove what a killed run of this `--out` left: temporary and old folders whose
        process is gone (on this host) and that nicsim wrote."""
        pattern = re.compile(rf"\.{re.escape(self.target.name)}\.(tmp|old)-(\d+)-[^/]*")
        host = socket.gethostname()
        try:
            names = os.listdir(parent)
        except OSError:
            return
        for name in names:
            m = pattern.fullmatch(name)
            if not m or pid_alive(int(m.group(2))):
                continue
            p = parent / name
            if p.is_symlink() or not p.is_dir():
                continue
            marker = _read_marker(p)
            empty = not any(p.iterdir())
            if empty or (marker is not None and marker.get("host") == host):
                shutil.rmtree(p, ignore_errors=True)

    # -- writing ------------------------------------------------------------------------------

    def file(self, name: str) -> Path:
        """Where to write `name` (inside the temporary folder until the block ends)."""
        assert self.path is not None, "use OutputDir in a with block"
        p = self.path / name
        make_parents(p)
        return p

    def text(self, name: str, text: str) -> Path:
        p = self.file(name)
        p.write_text(text, encoding="utf-8")
        return p

    def summary(self, summary: dict[str, Any]) -> dict[str, Any]:
        """Write summary.json: `summary` with `nicsim_version` and `schema_version` added (in
        place, so that what a command prints with --json is what the file holds)."""
        stamp(summary)
        self.json("summary.json", summary)
        return summary

    def parquet(self, name: str, rows: Iterable[Mapping[str, Any]], columns: Sequence[str] | None = None) -> Path:
        """A Parquet table of the same rows as [`csv`] (lists and tables as JSON text)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        if columns is None:  # given columns, the rows are written as they come (a generator is not kept)
            rows = list(rows)
            columns = list(dict.fromkeys(k for r in rows for k in r))
        data = {c: [_parquet_cell(r.get(c)) for r in rows] for c in columns}
        p = self.file(name)
        pq.write_table(pa.table(data), p)
        return p

    def json(self, name: str, obj: Any) -> Path:
        """JSON with sorted keys and indent 2; non-finite numbers become null."""
        return self.text(name, json.dumps(_finite(obj), sort_keys=True, indent=2, allow_nan=False, ensure_ascii=False) + "\n")

    def csv(self, name: str, rows: Iterable[Mapping[str, Any]], columns: Sequence[str] | None = None) -> Path:
        """A CSV table; columns default to the keys of the rows in first-seen order. Lists and
        tables are written as JSON, None as an empty cell."""
        if columns is None:  # given columns, the rows are written as they come (a generator is not kept)
            rows = list(rows)
            columns = list(dict.fromkeys(k for r in rows for k in r))
        p = self.file(name)
        with p.open("w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(columns)
            for r in rows:
                w.writerow([_cell(r.get(c)) for c in columns])
        return p

    def figure(self, stem: str, fig: Any, dpi: int = 150) -> tuple[Path, ...]:
        """Save a matplotlib figure as STEM.png (and STEM.svg, STEM.pdf when [`figure_formats`]
        asks for them; reproducible bytes) and close it; all or none (a failure removes what it
        wrote of them)."""
        import matplotlib
        import matplotlib.pyplot as plt

        paths = tuple(self.file(f"{stem}.{ext}") for ext in figure_formats())
        plain_log_ticks(fig)
        try:
            # The tight box once, for every file: `bbox_inches="tight"` draws the figure once
            # more per file to find it. Laying the figure out without rasterising it is enough to
            # measure its text (a full draw cost a third of a PNG's time more).
            fig.draw_without_rendering()
            bbox = fig.get_tightbbox(fig.canvas.get_renderer()).padded(matplotlib.rcParams["savefig.pad_inches"])
            for p in paths:
                if p.suffix == ".png":
                    fig.savefig(p, dpi=dpi, bbox_inches=bbox, metadata={"Software": None})
                else:
                    with matplotlib.rc_context({"svg.hashsalt": "nicsim"}):
                        fig.savefig(p, bbox_inches=bbox, metadata={"Creator": None} | (
                            {"Date": None} if p.suffix == ".svg" else {"CreationDate": None}))
        except BaseException:
            for p in paths:
                p.unlink(missing_ok=True)
            raise
        finally:
            plt.close(fig)
        return paths

    @contextmanager
    def optional(self, *files: str) -> Iterator[None]:
        """A secondary output (`files`: what it writes, e.g. a figure's PNG and SVG), written
        after the results: an error inside the block (not Ctrl-C or SIGTERM) is a one-line
        warning naming the files it did not write, and the folder keeps everything else.
        Python warnings inside (matplotlib's about an empty legend) are not shown."""
        import warnings

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                yield
        except Exception as e:  # any failure of a picture: the results stand
            _close_figures()
            assert self.path is not None
            missing = [f for f in files if not (self.path / f).exists()] or list(files)
            why = " ".join(f"{type(e).__name__}: {e}".split())[:300]
            from nicsim import ui

            ui.warn(f"{self.given}/: {', '.join(missing) or 'a secondary output'} not written ({why}); the "
                    "results are kept")


def missing_parents(path: str | os.PathLike[str]) -> list[Path]:
    """The folders above `path` that do not exist yet, the highest first: what creating its
    parent makes, and what to remove again when the command fails."""
    made: list[Path] = []
    p = Path(os.path.abspath(path)).parent
    while not os.path.lexists(p) and p != p.parent:
        made.insert(0, p)
        p = p.parent
    return made


def make_parents(path: str | os.PathLike[str]) -> None:
    """Create the folders above `path` that are missing, the highest first, one level at a time:
    pathlib's `mkdir(parents=True)` and `os.makedirs` recurse once per missing level, and an
    `--out` 2,000 levels deep raised RecursionError."""
    for d in missing_parents(path):
        d.mkdir(exist_ok=True)


def remove_empty(folders: Iterable[Path]) -> None:
    """Remove these folders, the deepest first, as long as they are empty."""
    for d in reversed(list(folders)):
        try:
            d.rmdir()
        except OSError:
            break


def written_files(folder: str | os.PathLike[str]) -> list[str]:
    """The files nicsim wrote in an output folder (from its marker), summary.json first."""
    m = _read_marker(Path(folder)) or {}
    files = [f for f in m.get("files", []) if isinstance(f, str)]
    return sorted(files, key=lambda f: (f != "summary.json", "/" in f, f))


def pyplot() -> Any:
    """matplotlib's pyplot for writing files (the Agg backend, no display), with math text off:
    the figures hold the user's names (flows, NICs, files), and `$5_to_$6` in a file name is
    text, not a formula."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["text.parse_math"] = False
    import matplotlib.pyplot as plt

    return plt


def prefetch_pyplot() -> None:
    """Import matplotlib (through [`pyplot`]) in a background thread, so that the import (most of
    what a figure costs: 0.6 s of 0.9 on an idle machine) runs while the command computes its
    results instead of after them. Only for a command that will not fork a Python process of its
    own while the thread may still be importing (a fork then leaves the child waiting on a
    module's import lock forever; `subprocess` execs at once and is safe). Any failure is left to
    the figure that imports it again, inside [`OutputDir.optional`]."""
    import threading

    def run() -> None:
        try:
            pyplot()
        except BaseException:  # noqa: BLE001 - the figure's own import reports it
            pass

    threading.Thread(target=run, name="nicsim-pyplot", daemon=True).start()


def plain_log_ticks(fig: Any) -> None:
    """Tick labels of log axes as plain text ("64", "1e+06"), with matplotlib's own plain log
    formatter: its default writes them as math text (`$\\mathdefault{2^{6}}$`), which
    [`pyplot`]'s `text.parse_math = False` would print as it is."""
    from matplotlib.ticker import LogFormatter, LogFormatterSciNotation

    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() != "log":
                continue
            base = axis.get_transform().base
            if isinstance(axis.get_major_formatter(), LogFormatterSciNotation):
                axis.set_major_formatter(LogFormatter(base=base))
            if isinstance(axis.get_minor_formatter(), LogFormatterSciNotation):
                axis.set_minor_formatter(LogFormatter(base=base, labelOnlyBase=False))


#: The figure formats a user may ask for (`--figures`, `$NICSIM_FIGURES`), and the default: a PNG
#: only (an SVG doubled what a figure cost, and most readers open the PNG).
FIGURE_FORMATS = ("png", "svg", "pdf")
DEFAULT_FIGURES = ("png",)
#: The environment variable that carries `--figures` to the command and its worker processes.
FIGURES_ENV = "NICSIM_FIGURES"


def parse_figure_formats(value: str, what: str = "--figures") -> tuple[str, ...]:
    """`png,svg` → ("png", "svg"): the formats in the order of FIGURE_FORMATS, PNG always among
    them (the one every command's docs name); an unknown one is an InputError."""
    asked = {f.strip().lower() for f in value.split(",") if f.strip()}
    bad = sorted(asked - set(FIGURE_FORMATS))
    if bad:
        from nicsim.errors import InputError

        raise InputError(f"{what}: unknown figure format {bad[0][:40]!r}; give a comma-separated list of "
                         + ", ".join(FIGURE_FORMATS))
    return tuple(f for f in FIGURE_FORMATS if f in asked | {"png"})


def figure_formats() -> tuple[str, ...]:
    """The formats figures are written in: `$NICSIM_FIGURES` (set by `--figures`), else PNG."""
    value = os.environ.get(FIGURES_ENV)
    return DEFAULT_FIGURES if not value else parse_figure_formats(value, f"--figures (${FIGURES_ENV})")


def figures(*stems: str) -> tuple[str, ...]:
    """The files [`OutputDir.figure`] writes for these stems (for [`OutputDir.optional`])."""
    return tuple(f"{s}.{ext}" for s in stems for ext in figure_formats())


def _close_figures() -> None:
    """Close the figures a failed plot left open (only if matplotlib is in use)."""
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


def stamp(summary: dict[str, Any]) -> dict[str, Any]:
    """Add `nicsim_version` and `schema_version` to a summary (in place)."""
    from nicsim import __version__

    summary["nicsim_version"] = __version__
    summary["schema_version"] = SCHEMA_VERSION
    return summary


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _git_commit() -> dict[str, Any] | None:
    """The commit of the nicsim checkout this package runs from (None when installed)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0:
        return None
    return {"commit": head.stdout.strip(), "dirty": bool(dirty.stdout.strip()) if dirty.returncode == 0 else None}


def _parquet_cell(v: Any) -> Any:
    if isinstance(v, list | tuple | dict):
        return json.dumps(v, separators=(",", ":"))
    return v


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
