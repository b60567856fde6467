"""Output folders: nicsim replaces only what it wrote itself, and leaves no debris.

Every test works in its own scratch folder (tmp_path) and checks that a user's files survive
whatever `--out` is given. The commands run as a user would run them, in a subprocess.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nicsim.errors import InputError
from nicsim.output import MARKER, OutputDir, OutputRefused

from conftest import PAPER, ROOT, assert_one_line_error, nicsim, xdp_object

TINY = ["--param", "traffic.packets=300", "--param", "measure.window=[10,290]"]


def _tree(p: Path) -> dict[str, bytes]:
    """Every file under `p` with its bytes (hidden ones included)."""
    return {str(f.relative_to(p)): f.read_bytes() for f in sorted(p.rglob("*")) if f.is_file()}


def _debris(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp-" in p.name or ".old-" in p.name)


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A user's folder: a sentinel file, a sub-folder with data, and the config copied in."""
    (tmp_path / "sentinel.txt").write_text("the user's data")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.txt").write_text("more of the user's data")
    (tmp_path / "cfg.toml").write_text(PAPER.read_text())
    return tmp_path


def test_the_working_directory_and_user_folders_survive(scratch: Path) -> None:
    """The bug that deleted a checkout: `--out ""` and `--out .` named the working directory."""
    before = _tree(scratch)
    cases = [(out, force) for out in ("", ".", "./", str(scratch)) for force in ([], ["--force"])]
    cases += [("data", []), (str(scratch / "data"), [])]  # a user's folder, without --force
    for out, force in cases:
        r = nicsim("run", "cfg.toml", "--out", out, *TINY, *force, cwd=scratch)
        assert_one_line_error(r, "--out" if out == "" else out.rstrip("/") or ".")
        assert _tree(scratch) == before, (out, force)
    assert _debris(scratch) == [] and _debris(scratch.parent) == []


def test_empty_out_is_an_error(scratch: Path) -> None:
    assert_one_line_error(nicsim("run", "cfg.toml", "--out", "", cwd=scratch), "--out", "empty path")
    with pytest.raises(OutputRefused, match="empty path"):
        OutputDir("")


def test_a_folder_nicsim_wrote_is_replaced_and_marked(scratch: Path) -> None:
    out = scratch / "run"
    assert nicsim("run", "cfg.toml", "--out", out, *TINY, cwd=scratch).returncode == 0
    marker = json.loads((out / MARKER).read_text())
    assert marker["command"][:2] == ["nicsim", "run"] and "--out" in marker["command"]
    assert marker["nicsim_version"] and {"config.json", "per_flow.csv", "summary.json", "provenance.json",
                                         "run.png"} <= set(marker["files"])
    assert nicsim("run", "cfg.toml", "--out", out, *TINY, "--param", "seed=3", cwd=scratch).returncode == 0
    assert json.loads((out / "config.json").read_text())["seed"] == 3
    # An empty folder is taken as it is.
    (scratch / "empty").mkdir()
    assert nicsim("run", "cfg.toml", "--out", "empty", *TINY, cwd=scratch).returncode == 0
    assert (scratch / "empty" / "summary.json").is_file()
    assert _debris(scratch) == []


def test_a_file_the_user_added_blocks_replacement(scratch: Path) -> None:
    out = scratch / "run"
    assert nicsim("run", "cfg.toml", "--out", out, *TINY, cwd=scratch).returncode == 0
    (out / "my-notes.md").write_text("mine")
    r = nicsim("run", "cfg.toml", "--out", out, *TINY, cwd=scratch)
    assert_one_line_error(r, str(out), "my-notes.md", "--force")
    assert (out / "my-notes.md").read_text() == "mine"
    # --force replaces it (the user asked), and the result is a clean nicsim folder.
    assert nicsim("run", "cfg.toml", "--out", out, *TINY, "--force", cwd=scratch).returncode == 0
    assert not (out / "my-notes.md").exists() and (out / "summary.json").is_file()


def test_force_never_removes_protected_folders(scratch: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    before = _tree(scratch)
    # A folder holding a git repository, however deep.
    repo = scratch / "project"
    (repo / "src" / ".git").mkdir(parents=True)
    (repo / "src" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert_one_line_error(nicsim("run", "cfg.toml", "--out", repo, *TINY, "--force", cwd=scratch),
                          str(repo), "git repository")
    assert (repo / "src" / ".git" / "HEAD").is_file()
    # A folder holding the command's own input (the config), also through a symbolic link.
    assert_one_line_error(nicsim("run", scratch / "cfg.toml", "--out", scratch, *TINY, "--force", cwd=scratch.parent),
                          str(scratch), "input")
    linked = scratch / "linked"
    linked.mkdir()
    (linked / "cfg.toml").symlink_to(scratch / "cfg.toml")
    assert_one_line_error(nicsim("run", linked / "cfg.toml", "--out", linked, *TINY, "--force", cwd=scratch.parent),
                          "input")
    assert (linked / "cfg.toml").is_symlink()
    # The working directory, the folders above it, / and $HOME.
    inner = scratch / "data"
    for out in ("..", str(scratch), "/"):
        assert_one_line_error(nicsim("run", scratch / "cfg.toml", "--out", out, *TINY, "--force", cwd=inner), out)
    home = tmp_path_factory.mktemp("home")
    (home / ".profile").write_text("x")
    r = subprocess.run([sys.executable, "-m", "nicsim", "run", str(scratch / "cfg.toml"), "--out", str(home), *TINY,
                        "--force"], capture_output=True, text=True, cwd=scratch, env={**os.environ, "HOME": str(home)})
    assert_one_line_error(r, str(home), "home")
    assert (home / ".profile").read_text() == "x"
    for p in (scratch, scratch.parent):
        assert _debris(p) == [], p
    assert {k: v for k, v in _tree(scratch).items() if k in before} == before


def test_out_up_the_tree_leaves_no_debris(scratch: Path) -> None:
    """`--out ..` is refused before anything is created: no .old- or .tmp- folder anywhere."""
    inner = scratch / "data"
    r = nicsim("run", scratch / "cfg.toml", "--out", "..", *TINY, cwd=inner)
    assert_one_line_error(r, "..", "above the working directory")
    for p in (inner, scratch, scratch.parent):
        assert _debris(p) == [], p


def test_a_symlinked_out_writes_behind_the_link(scratch: Path) -> None:
    real = scratch / "real"
    real.mkdir()
    (scratch / "link").symlink_to(real)
    assert nicsim("run", "cfg.toml", "--out", "link", *TINY, cwd=scratch).returncode == 0
    assert (scratch / "link").is_symlink() and (real / "summary.json").is_file()
    (scratch / "dangling").symlink_to(scratch / "nowhere")
    assert_one_line_error(nicsim("run", "cfg.toml", "--out", "dangling", *TINY, cwd=scratch), "dangling", "link")


def test_a_file_as_out_is_refused(scratch: Path) -> None:
    assert_one_line_error(nicsim("run", "cfg.toml", "--out", "sentinel.txt", *TINY, cwd=scratch),
                          "sentinel.txt", "not a folder")
    assert (scratch / "sentinel.txt").read_text() == "the user's data"


def test_stale_temporary_folders_are_cleaned(scratch: Path) -> None:
    """What a killed run left (its process is gone) goes the next time that --out is used; a
    live run's folder and a folder nicsim did not write stay."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    host = socket.gethostname()

    def stale(name: str, pid: int, marked: bool) -> Path:
        p = scratch / f".run.{name}-{pid}-{'m' if marked else 'u'}"
        p.mkdir()
        (p / "summary.json").write_text("{}")
        if marked:
            (p / MARKER).write_text(json.dumps({"host": host, "pid": pid, "files": ["summary.json"]}))
        return p

    killed_tmp, killed_old = stale("tmp", dead_pid, True), stale("old", dead_pid, True)
    live = stale("tmp", os.getpid(), True)
    unmarked = stale("tmp", dead_pid, False)
    assert nicsim("run", "cfg.toml", "--out", "run", *TINY, cwd=scratch).returncode == 0
    assert not killed_tmp.exists() and not killed_old.exists()
    assert live.exists() and unmarked.exists()


def test_sigterm_removes_the_temporary_folder(scratch: Path) -> None:
    cmd = [sys.executable, "-m", "nicsim", "run", "cfg.toml", "--out", "big",
           "--param", "traffic.packets=50000000", "--param", "measure.window=[100,49999000]"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=scratch)
    try:
        deadline = time.monotonic() + 60
        while not list(scratch.glob(".big.tmp-*")):  # the run has started
            assert p.poll() is None and time.monotonic() < deadline, p.communicate()
            time.sleep(0.05)
        time.sleep(0.3)
        p.send_signal(signal.SIGTERM)
        _, stderr = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 128 + signal.SIGTERM, stderr
    assert "Traceback" not in stderr
    assert not (scratch / "big").exists()
    assert _debris(scratch) == []


def test_unwritable_location_names_out(scratch: Path) -> None:
    """A location that cannot be written is reported against --out, not the hidden folder."""
    r = nicsim("run", "cfg.toml", "--out", "/proc/nicsim-out", *TINY, cwd=scratch)
    line = assert_one_line_error(r, "/proc/nicsim-out", "cannot create the output folder")
    assert ".tmp-" not in line


def test_library_checks_before_the_work(scratch: Path) -> None:
    """The Python API refuses the same folders, before it starts the run."""
    import nicsim

    cfg = nicsim.load_config(scratch / "cfg.toml", ["traffic.packets=300", "measure.window=[10,290]"])
    with pytest.raises(OutputRefused, match="did not write"):
        nicsim.run(cfg, scratch / "data")
    with pytest.raises(InputError, match="input"):
        nicsim.run(cfg, scratch, force=True)
    s = nicsim.run(cfg, scratch / "data", force=True)
    assert s["packets"]["offered"] == 300 and (scratch / "data" / MARKER).is_file()


def test_flow_synth_does_not_overwrite_a_capture(scratch: Path) -> None:
    cap = scratch / "user.pcap"
    cap.write_bytes(b"the user's capture")
    assert_one_line_error(nicsim("flowmem", "synth", cap, "--flows", "5"), str(cap), "exists", "--force")
    assert cap.read_bytes() == b"the user's capture"
    assert nicsim("flowmem", "synth", cap, "--flows", "5", "--force").returncode == 0
    assert cap.read_bytes()[:4] in (bytes.fromhex("d4c3b2a1"), bytes.fromhex("4d3cb2a1"))  # pcap (µs or ns)
    assert_one_line_error(nicsim("flowmem", "synth", "", "--flows", "5", cwd=scratch), "empty path")
    assert [p.name for p in scratch.iterdir() if p.name.startswith(".")] == []


def test_calibrate_does_not_overwrite_a_file_it_did_not_write(scratch: Path) -> None:
    """Refused before anything is measured: the user's file stays as it was."""
    assert_one_line_error(nicsim("xdp", "calibrate", "--out", "sentinel.txt", cwd=scratch),
                          "sentinel.txt", "not written by `nicsim xdp calibrate`", "--force")
    assert (scratch / "sentinel.txt").read_text() == "the user's data"
    assert_one_line_error(nicsim("xdp", "calibrate", "--out", "data", cwd=scratch), "data", "folder")
    assert_one_line_error(nicsim("xdp", "calibrate", "--out", "", cwd=scratch), "--out", "empty path")


def test_a_full_disk_names_out_and_leaves_nothing(tmp_path: Path) -> None:
    """ENOSPC while writing the figure, after the results (64 kB hold them, not the PNG): the
    results are kept, and one warning names the figure and the full disk (results first,
    issue 30); nothing else is left on the file system. tests/test_contract.py fills the disk
    before the results. Needs root to mount a 64 kB tmpfs."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (not root?)")
    try:
        r = nicsim("run", PAPER, "--out", mnt / "o", *TINY, "-q")
        assert r.returncode == 0, r.stderr
        (line,) = r.stderr.strip().splitlines()
        assert line.startswith(f"warning: {mnt / 'o'}/: run.png, run.svg not written") and "No space left" in line
        assert [p.name for p in mnt.iterdir()] == ["o"] and (mnt / "o" / "summary.json").is_file()
        # The disk full while the core writes the results (flowmem's flow files): one line that
        # names --out as given, not the hidden temporary folder the core was writing into.
        cap = tmp_path / "s.pcap"
        assert nicsim("flowmem", "synth", cap, "--flows", "200", "-q").returncode == 0
        r = nicsim("flowmem", "reassemble", cap, "--out", mnt / "f", "-q")
        line = assert_one_line_error(r, f"{mnt / 'f'}/", "No space left")
        assert ".tmp-" not in line
        assert [p.name for p in mnt.iterdir()] == ["o"]
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


# What a second hostile probe found (2026-11-26): inputs that --force could delete, git
# repositories without a `.git` entry, a folder that cannot be seen whole, two runs at once,
# and folders left behind.

def test_force_keeps_every_input_whatever_its_name(scratch: Path) -> None:
    calls = xdp_object("calls")
    if not calls.exists():
        pytest.skip("make xdp-suite first")
    d = scratch / "d"
    d.mkdir()
    target = d / "mytarget.txt"  # a target file whose name does not end in .toml
    target.write_text((ROOT / "crates" / "nicsim-xdp" / "targets" / "nfp.toml").read_text())
    assert_one_line_error(nicsim("xdp", "analyze", calls, "--target", target, "--out", d, "--force"), "input")
    cal = scratch / "e" / "x86-jit.toml"
    cal.parent.mkdir()
    cal.write_text("# the user's calibration\n")
    r = subprocess.run([sys.executable, "-m", "nicsim", "xdp", "analyze", str(calls), "--target", "x86-jit",
                        "--out", str(cal.parent), "--force"], capture_output=True, text=True,
                       env={**os.environ, "NICSIM_X86_JIT": str(cal)})
    assert r.returncode == 2 and cal.exists(), r.stderr
    # A swept traffic file is an input too.
    caps = scratch / "caps"
    caps.mkdir()
    for n in ("a.pcap", "b.pcap"):
        (caps / n).write_bytes(b"x")
    r = nicsim("sweep", "cfg.toml", *TINY, "-p", f"traffic.replay.path={caps}/a.pcap,{caps}/b.pcap", "--out", caps,
               "--force", cwd=scratch)
    assert_one_line_error(r, "input")
    assert sorted(p.name for p in caps.iterdir()) == ["a.pcap", "b.pcap"]


def test_force_never_replaces_a_git_folder(scratch: Path) -> None:
    bare = scratch / "bare.git"
    assert subprocess.run(["git", "init", "-q", "--bare", str(bare)]).returncode == 0
    assert_one_line_error(nicsim("run", "cfg.toml", *TINY, "--out", bare, "--force", cwd=scratch), "git repository")
    repo = scratch / "repo"
    assert subprocess.run(["git", "init", "-q", str(repo)]).returncode == 0
    for out in (repo / ".git", repo / ".git" / "objects"):
        assert_one_line_error(nicsim("run", "cfg.toml", *TINY, "--out", out, "--force", cwd=scratch),
                              "git repository")
    assert (bare / "HEAD").is_file() and (repo / ".git" / "HEAD").is_file()


def test_a_folder_that_cannot_be_seen_whole_is_kept(scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file nicsim cannot list (a path longer than the system takes) is not taken as absent."""
    out = scratch / "o"
    assert nicsim("run", "cfg.toml", *TINY, "--out", out, cwd=scratch).returncode == 0
    monkeypatch.chdir(out)  # the test process's own folder is given back afterwards
    for _ in range(20):
        os.makedirs("d" * 250, exist_ok=True)
        os.chdir("d" * 250)
    Path("precious.txt").write_text("mine")
    os.chdir(scratch)
    r = nicsim("run", "cfg.toml", *TINY, "--out", out, cwd=scratch)
    assert_one_line_error(r, "cannot see all of it")
    assert out.exists()


def test_runs_writing_the_same_out_at_once(scratch: Path) -> None:
    procs = [subprocess.Popen([sys.executable, "-m", "nicsim", "run", "cfg.toml", "--param", f"seed={s}",
                               "--param", "traffic.packets=3000", "--param", "measure.window=[10,2990]",
                               "--out", "o", "-q"], cwd=scratch, stderr=subprocess.PIPE, text=True)
             for s in (1, 2, 3)]
    errs = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], errs
    assert (scratch / "o" / "summary.json").is_file() and _debris(scratch) == []


def test_a_failed_run_removes_the_folders_it_made(scratch: Path) -> None:
    r = nicsim("run", "cfg.toml", *TINY, "--param", 'traffic.replay={path="nothere.pcap"}', "--out", "newa/newb/o",
               cwd=scratch)
    assert r.returncode == 2
    assert not (scratch / "newa").exists()


def test_odd_markers_are_not_trusted(scratch: Path) -> None:
    for i, marker in enumerate(['{"files": 5}', "null", "[[1]]"]):
        out = scratch / f"o{i}"
        out.mkdir()
        (out / MARKER).write_text(marker)
        (out / "mine.txt").write_text("mine")
        assert_one_line_error(nicsim("run", "cfg.toml", *TINY, "--out", out, cwd=scratch), "did not write")
    out = scratch / "z"
    out.mkdir()
    (out / MARKER).symlink_to("/dev/zero")
    assert_one_line_error(nicsim("run", "cfg.toml", *TINY, "--out", out, cwd=scratch, timeout=60), "did not write")


def test_log_axes_tick_labels_are_text_not_raw_math(tmp_path: Path) -> None:
    # Figures with log axes (flowmem's stream sizes, a run's packet sizes): their tick labels
    # are plain text. matplotlib's default log formatter writes `$\mathdefault{10^{2}}$`, which
    # nicsim's `text.parse_math = False` (user names are text) printed as it is (issue 34). The
    # SVG keeps every label's text in a comment.
    cap = tmp_path / "s.pcap"
    assert nicsim("flowmem", "synth", cap, "--flows", "50", "-q").returncode == 0
    assert nicsim("flowmem", "reassemble", cap, "--out", tmp_path / "f", "-q").returncode == 0
    svg = (tmp_path / "f" / "stream_sizes.svg").read_text()
    assert "mathdefault" not in svg and "<!-- 1000 -->" in svg


def test_figures_are_png_unless_asked(tmp_path: Path) -> None:
    # A figure is a PNG by default (an SVG doubled what a small analysis's figure cost, issue 35);
    # `--figures` (or $NICSIM_FIGURES) asks for SVG and PDF beside it, and the marker lists what
    # was written. An unknown format is one line, exit 2, before any work.
    env = {k: v for k, v in os.environ.items() if k != "NICSIM_FIGURES"}
    cap = tmp_path / "s.pcap"
    assert nicsim("flowmem", "synth", cap, "--flows", "20", "-q").returncode == 0

    def run(*extra: str, out: str, environ: dict[str, str] = env) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "nicsim", *extra, "flowmem", "reassemble", str(cap), "--out",
                               str(tmp_path / out), "-q"], capture_output=True, text=True, env=environ, timeout=300)

    assert run(out="a").returncode == 0
    written = sorted(p.name for p in (tmp_path / "a").iterdir() if p.name.startswith("stream_sizes"))
    assert written == ["stream_sizes.png"]
    assert run("--figures", "svg,pdf", out="b").returncode == 0
    written = sorted(p.name for p in (tmp_path / "b").iterdir() if p.name.startswith("stream_sizes"))
    assert written == ["stream_sizes.pdf", "stream_sizes.png", "stream_sizes.svg"]
    assert (tmp_path / "b" / "stream_sizes.pdf").read_bytes().startswith(b"%PDF")
    marker = json.loads((tmp_path / "b" / MARKER).read_text())
    assert {"stream_sizes.pdf", "stream_sizes.svg"} <= set(marker["files"])
    for extra, environ in ((["--figures", "png,jpg"], env), ([], {**env, "NICSIM_FIGURES": "jpg"})):
        r = run(*extra, out="c", environ=environ)
        assert_one_line_error(r, "unknown figure format 'jpg'")
        assert not (tmp_path / "c").exists()
