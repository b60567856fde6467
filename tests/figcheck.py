"""What every figure nicsim writes must be (issue 34 §6), read back from the files themselves:
each STEM.png readable and not empty, each STEM.svg parsed for its text. matplotlib writes an
SVG's text as paths with the string beside it as a comment, in groups named after what the
text is: `matplotlib.axis_N` holds an axis, its `xtick_K`/`ytick_K` groups the tick labels and
its last `text_K` group the axis label. So a figure is checked as drawn, whichever command and
plotting code made it:
- no tick label or axis label is raw math text (`$\\mathdefault{2^{6}}$`, `$...$`): the labels
  are rendered;
- every axis with numeric tick labels has a label, and the label names a unit (`(ns)`,
  `Gbit/s`, `%`, `cycles`, …), says what it counts (`share of …`, `packets`, …), or is the
  configuration key a sweep varies.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

#: A label names a unit: in parentheses or brackets, or one of these words.
UNIT = re.compile(r"\(.*\S.*\)|\[.*\S.*\]|\b(ns|µs|us|ms|s|seconds|Gbit/s|Mbit/s|bit/s|Mpps|pps|packets/s|"
                  r"GB/s|MB/s|B|bytes|KB|MB|GB|cycles|MHz|GHz|%|x|×)(\b|$)|%|×")
#: Or it counts something (a dimensionless axis says what it counts).
COUNTS = re.compile(r"\b(share|fraction|CDF|count|number|packets|flows|paths|units|rank|ratio|"
                    r"instructions|insns|times|speed-?up|directions)\b", re.IGNORECASE)
#: Or it is a configuration key a sweep varies (`seed`, `traffic.rate_gbps`): the user's name,
#: which carries its unit by the configuration's convention (`_gbps`, `_bytes`, `_mhz`).
KEY = re.compile(r"^[a-z][\w\[\]]*[._][\w.\[\]]+$")
MATH = re.compile(r"\$|\\mathdefault|\\math|\^\{")
NUMBER = re.compile(r"^[\u2212\-+]?[\d.,]+([eE][\u2212\-+]?\d+)?\s*[%kMGµ]?$")


def _text(g: ET.Element) -> str:
    """The string a text group draws (its comment)."""
    return " ".join((c.text or "").strip() for c in g.iter() if c.tag is ET.Comment).strip()


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def svg_axes(path: Path) -> list[tuple[str, str, list[str]]]:
    """Each axis of an SVG figure: (axis id, its label, its tick labels)."""
    tree = ET.parse(path, parser=ET.XMLParser(target=ET.TreeBuilder(insert_comments=True)))
    out = []
    for g in tree.iter():
        gid = g.get("id", "")
        if _local(g.tag) != "g" or not gid.startswith("matplotlib.axis_"):
            continue
        ticks, label = [], ""
        for child in g:
            cid = child.get("id", "")
            if re.match(r"[xy]tick_\d+$", cid):
                ticks += [t for t in (_text(x) for x in child.iter() if x.get("id", "").startswith("text_")) if t]
            elif cid.startswith("text_"):
                label = _text(child)
        out.append((gid, label, ticks))
    return out


def figure_problems(folder: Path) -> list[str]:
    """What is wrong with the figures in `folder` (empty: nothing): one line each, naming the
    file and the axis."""
    problems = []
    svgs = sorted(folder.rglob("*.svg"))
    for png in sorted(folder.rglob("*.png")):
        if png.stat().st_size == 0:
            problems.append(f"{png.name}: empty")
            continue
        import matplotlib.image

        img = matplotlib.image.imread(png)
        if img.ndim < 2 or img.shape[0] < 50 or img.shape[1] < 50:
            problems.append(f"{png.name}: {img.shape} pixels")
        if not png.with_suffix(".svg").exists():
            problems.append(f"{png.name}: no SVG beside it")
    for svg in svgs:
        axes = svg_axes(svg)
        if not axes:
            problems.append(f"{svg.name}: no axes")
        for gid, label, ticks in axes:
            where = f"{svg.name} {gid} ({label or 'no label'})"
            raw = [t for t in [label, *ticks] if MATH.search(t)]
            if raw:
                problems.append(f"{where}: raw math text {raw[:3]}")
            numeric = ticks and all(NUMBER.match(t.replace(" ", "")) for t in ticks)
            if numeric and not label:
                problems.append(f"{where}: numeric ticks {ticks[:3]} without an axis label")
            elif numeric and not (UNIT.search(label) or COUNTS.search(label) or KEY.match(label)):
                problems.append(f"{where}: the label names no unit")
    return problems


def figure_stems(folder: Path) -> set[str]:
    """The figures a folder holds (their stems)."""
    return {p.stem for p in folder.rglob("*.png")}
