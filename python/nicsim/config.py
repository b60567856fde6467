"""Datapath configurations: TOML files, `--param` overrides, and the hand-over to the core.

A configuration is the TOML document as a dict ([`Config`], which remembers its file). The Rust
core validates it (types, unknown keys, meaning) and names the key path of the first problem;
this module adds the file name, so every error reads `FILE: key.path: what was expected`.

Overrides are `key=value` with dotted key paths and list indices (`traffic.rate_gbps=96`,
`flows[0].chain=["crc","rss"]`); the value is read as a TOML value when it is one (numbers,
booleans, quoted strings, arrays, inline tables) and kept as a string otherwise. Relative paths
inside a file (`traffic.replay.path`, `traffic.size.path`) are resolved against the file's
folder; paths given as overrides against the current directory.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import sys
import tomllib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from nicsim.errors import ConfigError, InputError

#: Keys holding file paths, resolved relative to the configuration file.
PATH_KEYS = ("traffic.replay.path", "traffic.size.path")

Key = list[str | int]
Override = tuple[str, Any]


class Config(dict):
    """A configuration document; `source` names the file it came from and `overridden` the key
    paths that `--param` set (for error messages: a problem there is the `--param`'s)."""

    source: str | None = None
    overridden: tuple[str, ...] = ()

    def __init__(self, *args: Any, source: str | None = None, overridden: Iterable[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.source = source
        self.overridden = tuple(overridden)

    def origin(self, key: str) -> str | None:
        """Where the value at `key` came from: `--param` when an override set it, else the file."""
        return "--param" if any(_key_under(key, k) for k in self.overridden) else self.source


def load_config(path: str | os.PathLike[str], overrides: Iterable[str | Override] | Mapping[str, Any] = (),
                check: Callable[[Mapping[str, Any]], None] | None = None) -> Config:
    """Read a TOML configuration, apply overrides (`"key=value"` strings or `(key, value)`
    pairs) and validate it (with `check`, default: as a datapath configuration). Raises
    [`ConfigError`] naming the file and the key path."""
    raw, file, base = _read_config_bytes(path)
    doc = parse_toml(raw, file)
    _resolve_paths(doc, base)
    cfg = with_overrides(Config(doc, source=file), overrides)
    with blame_overrides(file, override_keys(overrides)):
        (check or validate)(cfg)
    return cfg


@contextmanager
def blame_overrides(file: str | None, keys: Iterable[str]) -> Iterator[None]:
    """A [`ConfigError`] at a key that one of `keys` (overrides) set is reported against
    `--param`, not against the file, whose value it replaced."""
    try:
        yield
    except ConfigError as e:
        if e.file == file and any(_key_under(e.path, k) for k in keys):
            e.file = "--param"
        raise


#: The largest configuration read (the paper's is 1.5 kB): a bound for standard input and
#: for a path that names something endless (a device, a pipe).
MAX_CONFIG_BYTES = 16 << 20


def _read_config_bytes(path: str | os.PathLike[str]) -> tuple[bytes, str, Path]:
    """(bytes, name for errors, folder that relative paths in it are relative to) of a
    configuration file, or of standard input for `-`."""
    if os.fspath(path) == "-":
        raw = sys.stdin.buffer.read(MAX_CONFIG_BYTES + 1)
        file, base = "<stdin>", Path.cwd()
    else:
        p = Path(path)
        file, base = str(p), p.parent
        try:
            if p.is_dir():
                raise ConfigError("is a folder, not a configuration file", file=file)
            with p.open("rb") as f:
                raw = f.read(MAX_CONFIG_BYTES + 1)
        except FileNotFoundError:
            raise ConfigError("no such file", file=file) from None
        except OSError as e:
            raise ConfigError(e.strerror or str(e), file=file) from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"larger than {MAX_CONFIG_BYTES >> 20} MiB: not a configuration", file=file)
    return raw, file, base


#: How deep tables and arrays may nest in a configuration (the deepest nicsim reads is 4).
MAX_DEPTH = 32
#: The longest name (`flows[].name`, `offloads[].name`, `nics[].name`, ...): names title tables,
#: plots and per-flow rows, and a 100,000-character one cost the simulation gigabytes.
MAX_NAME_CHARS = 200


def parse_toml(raw: bytes, file: str) -> dict[str, Any]:
    """A TOML document from bytes: UTF-8 (a leading byte-order mark is allowed, as editors on
    Windows write one), nested at most MAX_DEPTH deep. Errors name `file` and the position."""
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
        doc = tomllib.loads(text)
    except UnicodeDecodeError as e:
        raise ConfigError(f"not UTF-8 text (byte {e.start})", file=file) from None
    except tomllib.TOMLDecodeError as e:
        if text.lstrip().startswith("{"):
            # A run's config.json (the configuration it ran, as JSON) given back to it.
            raise ConfigError("is JSON, not TOML: nicsim reads TOML configurations (a run's config.json is "
                              "the configuration it ran: `nicsim run` the TOML file it came from, with the same "
                              "--param)", file=file) from None
        raise ConfigError(*_toml_error(str(e)), file=file) from None
    except RecursionError:
        raise ConfigError(f"tables or arrays nested more than {MAX_DEPTH} deep", file=file) from None
    except ValueError as e:  # Python's own limits, e.g. an integer of more than 4,300 digits
        raise ConfigError(_value_error(e), file=file) from None
    key = _too_deep(doc, MAX_DEPTH)
    if key is not None:
        raise ConfigError(f"nested more than {MAX_DEPTH} deep", path=key, file=file)
    key = _int_out_of_range(doc)
    if key is not None:  # TOML integers are 64-bit; Python's tomllib reads any
        raise ConfigError("integer out of TOML's 64-bit range", path=key, file=file)
    return doc


def _int_out_of_range(v: Any, path: str = "") -> str | None:
    """The key path of the first integer outside -2^63..2^63-1, or None."""
    stack = [(v, path)]
    while stack:
        x, p = stack.pop()
        if isinstance(x, int) and not isinstance(x, bool) and not -(2**63) <= x < 2**63:
            return p or "."
        if isinstance(x, dict):
            stack.extend((y, f"{p}.{k}" if p else str(k)) for k, y in x.items())
        elif isinstance(x, list):
            stack.extend((y, f"{p}[{i}]") for i, y in enumerate(x))
    return None


def read_input_file(path: str | os.PathLike[str], what: str, max_bytes: int) -> bytes:
    """The bytes of an input file (`what` names it in errors): a regular file of at most
    `max_bytes`, so that a device or an endless file is refused instead of read forever."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{path}: " + (f"no such {what.removesuffix(' file')} file" if not os.path.lexists(p) else
                                        f"not a regular file (the {what} must be a file, not a pipe, "
                                        "device or folder)"))
    too_large = InputError(f"{path}: larger than {max_bytes >> 20} MiB: not a {what}")
    try:
        with p.open("rb") as f:
            # The size first, so that a file too large is refused before any of it is read; then
            # at most one byte past the limit, should the file grow meanwhile.
            if os.fstat(f.fileno()).st_size > max_bytes:
                raise too_large
            raw = f.read(max_bytes + 1)
    except OSError as e:
        raise InputError(f"{path}: cannot read the {what}: {e.strerror}") from None
    if len(raw) > max_bytes:
        raise too_large
    return raw


def read_toml_file(path: str | os.PathLike[str], what: str) -> str:
    """The text of a TOML file that the core parses (a target file), checked here first so that
    its syntax errors read `FILE: line L, column C: MSG`. `what` names it in read errors."""
    raw = read_input_file(path, what, MAX_CONFIG_BYTES)
    parse_toml(raw, str(path))
    return raw.decode("utf-8").removeprefix("\ufeff")


def _value_error(e: ValueError) -> str:
    """Python's message for a value it will not convert, in the user's terms."""
    text = _one_line(e)
    if "integer string conversion" in text:
        return "an integer with more than 4,300 digits (TOML integers are 64-bit)"
    return text[:200]


def _too_deep(v: Any, depth: int, path: str = "") -> str | None:
    """The key path where `v` nests deeper than `depth`, or None (iterative: no recursion limit)."""
    stack = [(v, path, 0)]
    while stack:
        x, p, d = stack.pop()
        if isinstance(x, dict | list) and d > depth:
            return p or "."
        if isinstance(x, dict):
            stack.extend((y, f"{p}.{k}" if p else str(k), d + 1) for k, y in x.items())
        elif isinstance(x, list):
            stack.extend((y, f"{p}[{i}]", d + 1) for i, y in enumerate(x))
    return None


def override_keys(overrides: Iterable[str | Override] | Mapping[str, Any]) -> list[str]:
    if isinstance(overrides, Mapping):
        keys = list(overrides)
    else:
        keys = [o.partition("=")[0] if isinstance(o, str) else o[0] for o in overrides]
    out = []
    for k in keys:
        try:
            out.append(format_key(parse_key(k.strip())))
        except ConfigError:
            pass
    return out


def key_under(path: str, key: str) -> bool:
    """Whether key path `path` is `key` or inside it (`flows[0].chain` is under `flows`)."""
    return path == key or path.startswith(key + ".") or path.startswith(key + "[")


_key_under = key_under


def _toml_error(text: str) -> tuple[str, str]:
    """tomllib's `MSG (at line L, column C)` as (`MSG`, `line L, column C`)."""
    m = re.fullmatch(r"(.*) \(at (line \d+, column \d+|end of document)\)", text, flags=re.S)
    return (m.group(1), m.group(2)) if m else (text, "")


def with_overrides(
    config: Mapping[str, Any], overrides: Iterable[str | Override] | Mapping[str, Any], *, relative_to: str | os.PathLike[str] | None = None
) -> Config:
    """A copy of `config` with overrides applied. Path values among them are resolved against
    `relative_to` (default: the current directory). Not validated."""
    if isinstance(overrides, Mapping):
        items = list(overrides.items())
    else:
        items = [parse_override(o) if isinstance(o, str) else o for o in overrides]
    out = Config(copy.deepcopy(dict(config)), source=getattr(config, "source", None),
                 overridden=getattr(config, "overridden", ()))
    touched = []
    for key, value in items:
        tokens = parse_key(key)
        set_key(out, tokens, copy.deepcopy(value), key)
        touched.append(format_key(tokens))
    out.overridden += tuple(touched)
    _resolve_paths(out, Path(relative_to) if relative_to is not None else Path.cwd(), only=touched)
    return out


def parse_override(text: str) -> Override:
    """`"key.path=value"` → (`"key.path"`, parsed value)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"expected KEY=VALUE (e.g. traffic.rate_gbps=96), got '{text}'", file="--param")
    return key.strip(), parse_value(value, key.strip())


def parse_sweep_param(text: str) -> tuple[str, list[Any]]:
    """`"key=v1,v2,..."` → (`"key"`, [v1, v2, ...]); commas inside brackets, braces or quotes
    do not split (`flows[0].chain=["crc","rss"],["crc"]` has two values)."""
    key, sep, values = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"expected KEY=V1,V2,... (e.g. traffic.rate_gbps=64,96,128), got '{text}'", file="--param")
    parts = split_top_level(values)
    if any(not p.strip() for p in parts):
        raise ConfigError(f"empty value in '{values}'", path=key.strip(), file="--param")
    return key.strip(), [parse_value(p, key.strip()) for p in parts]


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split on `sep` outside brackets, braces and quoted strings."""
    parts, depth, quote, start, i = [], 0, "", 0, 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return parts


def parse_value(text: str, key: str | None = None) -> Any:
    """A TOML value (`96`, `1.5`, `true`, `"x"`, `[1, 2]`, `{dist = "fixed", bytes = 64}`) or,
    when the text is not one, the text itself (so `arch=panic` needs no quotes)."""
    text = text.strip()
    try:
        doc = tomllib.loads(f"v = {text}")
    except tomllib.TOMLDecodeError:
        return text
    except ValueError as e:  # an integer of more than 4,300 digits
        raise ConfigError(_value_error(e), path=text[:40] + "…", file="--param") from None
    except RecursionError:
        raise ConfigError(f"nested more than {MAX_DEPTH} deep", path=text[:40] + "…", file="--param") from None
    if _too_deep(doc["v"] if "v" in doc else doc, MAX_DEPTH) is not None:
        raise ConfigError(f"nested more than {MAX_DEPTH} deep", path=text[:40], file="--param")
    if _int_out_of_range(doc) is not None:  # as in a file: TOML integers are 64-bit
        raise ConfigError(f"{text[:40]}: integer out of TOML's 64-bit range", path=key or "", file="--param")
    return doc["v"] if len(doc) == 1 else text


_PART = re.compile(r"([A-Za-z0-9_-]+)((?:\[-?\d+\])*)")


def parse_key(key: str) -> Key:
    """`"flows[0].chain"` → `["flows", 0, "chain"]`."""
    tokens: Key = []
    for part in key.split("."):
        m = _PART.fullmatch(part.strip())
        if not m:
            raise ConfigError("not a key path (expected names and [index] joined by dots, e.g. flows[0].chain)", path=key, file="--param")
        tokens.append(m.group(1))
        for i in re.findall(r"-?\d+", m.group(2)):
            if int(i) < 0:
                raise ConfigError(f"index {i}: list indices count from 0 (negative ones are not supported)",
                                  path=key, file="--param")
            tokens.append(int(i))
        if len(tokens) > MAX_DEPTH:  # as deep a table as a configuration file may hold
            raise ConfigError(f"nested more than {MAX_DEPTH} deep", path=key[:80] + ("…" if len(key) > 80 else ""),
                              file="--param")
    return tokens


def format_key(tokens: Key) -> str:
    out = ""
    for t in tokens:
        out += f"[{t}]" if isinstance(t, int) else (f".{t}" if out else t)
    return out


def set_key(doc: dict[str, Any], tokens: Key, value: Any, key: str = "") -> None:
    """Set `doc[tokens...] = value`, creating missing tables; an index may append (== length)."""
    node: Any = doc
    for i, tok in enumerate(tokens):
        last = i == len(tokens) - 1
        here = format_key(tokens[: i + 1])
        if isinstance(tok, str):
            if not isinstance(node, dict):
                raise ConfigError(f"{format_key(tokens[:i])} is not a table", path=key or here, file="--param")
            if last:
                node[tok] = value
            else:
                if tok not in node:
                    if isinstance(tokens[i + 1], int):
                        raise ConfigError(f"{here} does not exist, so it cannot be indexed", path=key or here, file="--param")
                    node[tok] = {}
                node = node[tok]
        else:
            if not isinstance(node, list):
                raise ConfigError(f"{format_key(tokens[:i])} is not a list", path=key or here, file="--param")
            n = len(node)
            if last and tok == n:
                node.append(value)
            elif -n <= tok < n:
                if last:
                    node[tok] = value
                else:
                    node = node[tok]
            else:
                raise ConfigError(f"index {tok} out of range ({format_key(tokens[:i])} has {n} entries)", path=key or here, file="--param")


def get_key(doc: Mapping[str, Any], key: str) -> Any:
    """`doc[...]` at a dotted key path, or None when absent."""
    node: Any = doc
    for tok in parse_key(key):
        try:
            node = node[tok]
        except (KeyError, IndexError, TypeError):
            return None
    return node


def _resolve_paths(doc: dict[str, Any], base: Path, only: Iterable[str] | None = None) -> None:
    """Make the PATH_KEYS absolute against `base` (only those under the keys in `only`)."""
    only = None if only is None else list(only)
    for key in PATH_KEYS:
        if only is not None and not any(key == o or key.startswith(o + ".") for o in only):
            continue
        value = get_key(doc, key)
        if isinstance(value, str) and value and not os.path.isabs(value):
            parent_key, _, leaf = key.rpartition(".")
            get_key(doc, parent_key)[leaf] = os.path.normpath(base.resolve() / value)


def to_json(config: Mapping[str, Any]) -> str:
    """The configuration as JSON for the core; values JSON cannot hold are reported by key."""
    _check_json(config, "", getattr(config, "source", None))
    return json.dumps(config, separators=(",", ":"))


def _check_json(v: Any, path: str, file: str | None) -> None:
    if isinstance(v, dict):
        for k, x in v.items():
            _check_json(x, f"{path}.{k}" if path else str(k), file)
    elif isinstance(v, list | tuple):
        for i, x in enumerate(v):
            _check_json(x, f"{path}[{i}]", file)
    elif isinstance(v, float) and not math.isfinite(v):
        raise ConfigError("must be a finite number", path=path, file=file)
    elif isinstance(v, str) and "\x00" in v:
        raise ConfigError("contains a NUL character", path=path, file=file)
    elif isinstance(v, str) and len(v) > MAX_NAME_CHARS and path.rsplit(".", 1)[-1].endswith("name"):
        raise ConfigError(f"a name of {len(v):,} characters: at most {MAX_NAME_CHARS}", path=path, file=file)
    elif not (v is None or isinstance(v, str | int | float | bool)):
        raise ConfigError(f"a {type(v).__name__} is not a valid value here", path=path, file=file)


@contextmanager
def core_errors(source: str | None, about: str | None = None) -> Iterator[None]:
    """Turn the core's exceptions into [`ConfigError`] (with the file `source`) and
    [`InputError`] (prefixed with `about`, the input it is about, when given and not named)."""
    from nicsim import _core

    try:
        yield
    except _core.ConfigError as e:
        path, msg = e.args if len(e.args) == 2 else ("", str(e.args[0]) if e.args else "")
        raise ConfigError(_one_line(msg), path="" if path == "." else str(path), file=source) from None
    except _core.InputError as e:
        msg = _one_line(e.args[0] if e.args else e)
        raise InputError(msg if about is None or msg.startswith(about) else f"{about}: {msg}") from None


def _one_line(msg: Any) -> str:
    """A message on one line (the core's parser errors span several)."""
    return "; ".join(line.strip() for line in str(msg).splitlines() if line.strip())


def validate(config: Mapping[str, Any]) -> None:
    """Check a configuration with the core without running it (and its traffic files' paths
    here: the core would wait forever on a pipe with no writer)."""
    from nicsim import _core

    payload = to_json(config)
    file = getattr(config, "source", None)
    for key in PATH_KEYS:
        value = get_key(config, key)
        if not isinstance(value, str):
            continue
        if not value:
            raise ConfigError("an empty path", path=key, file=file)
        if os.path.lexists(value) and not os.path.isfile(value):
            if os.path.islink(value) and not os.path.exists(value):
                what = f"a symbolic link to {os.readlink(value)}, which does not exist"
            else:
                what = "a folder" if os.path.isdir(value) else "not a regular file (a pipe or a device)"
            raise ConfigError(f"{value}: {what}; a capture file is needed", path=key, file=file)
    with core_errors(getattr(config, "source", None)):
        _core.offload_units(payload)


def offload_units(config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Eq. 1's table: one row per offload (name, width_bits, clock_mhz, delay_cycles, unit_gbps,
    eq1_units, units)."""
    from nicsim import _core

    payload = to_json(config)
    with core_errors(getattr(config, "source", None)):
        return json.loads(_core.offload_units(payload))
