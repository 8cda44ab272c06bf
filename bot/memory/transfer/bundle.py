"""The bundle a memory export writes and an import reads.

    manifest.json   {"version": 1, "format": "mnemo-memory", "exported_at": "…",
                     "documents": [{"path": "MEMORY.md", "bytes": 120, "sha256": "…"}, …],
                     "checks": [{"scope": "", "query": "…", "first": "MEMORY.md#L3-L3"}, …]}
    memory/<path>   each document's bytes

as a folder, or the same inside one gzipped tar file (a FILE ending in .tar.gz or .tgz). A
bundle read back is checked before anything is written: the format and version, every path
relative and inside (no `..`, no absolute path, no link), every document present with its size
and digest. A tar is read member by member by the manifest's names, never extracted as a whole.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from bot import versioned
from bot.storage.files import atomic_write_bytes, ensure_dir
from bot.versioned import Fields, objects

FORMAT = "mnemo-memory"
VERSION = 1
MANIFEST = "manifest.json"
FOLDER = "memory"
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")


class BundleError(Exception):
    """A bundle that cannot be written or read as one; the message says what to fix."""


@dataclass(frozen=True)
class Document:
    path: str  # relative to the memory root, "/"-separated
    data: bytes


@dataclass(frozen=True)
class Check:
    """A search the source answered: the import must answer it alike."""

    scope: str  # "" for the owner's global memory, else a chat key
    query: str
    first: str  # the citation of the first hit from memory, "" for none


@dataclass(frozen=True)
class Bundle:
    exported_at: str
    documents: tuple[Document, ...]
    checks: tuple[Check, ...] = ()


def is_archive(target: Path) -> bool:
    return target.name.endswith(ARCHIVE_SUFFIXES)


def write_bundle(bundle: Bundle, target: Path) -> None:
    """`bundle` as a folder (which must not exist or be empty) or a .tar.gz file (which must
    not exist)."""
    manifest = _manifest(bundle).encode("utf-8")
    if is_archive(target):
        if target.exists():
            raise BundleError(f"{target} exists; give a new file name")
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            _add(tar, MANIFEST, manifest)
            for document in bundle.documents:
                _add(tar, f"{FOLDER}/{document.path}", document.data)
        atomic_write_bytes(target, buffer.getvalue())
        return
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise BundleError(f"{target} is not an empty folder; give a new one")
    ensure_dir(target)
    for document in bundle.documents:
        atomic_write_bytes(target / FOLDER / document.path, document.data)
    atomic_write_bytes(target / MANIFEST, manifest)


def read_bundle(source: Path) -> Bundle:
    """The bundle at `source` (a folder or a .tar.gz file), checked; `BundleError` otherwise."""
    if source.is_dir():
        return _parsed(lambda name: _read_file(source, name))
    if not source.is_file():
        raise BundleError(f"{source} is neither a bundle folder nor a bundle file")
    try:
        with tarfile.open(source, mode="r:*") as tar:
            return _parsed(lambda name: _read_member(tar, name))
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise BundleError(f"{source} is not a readable .tar.gz bundle ({exc})") from None


def _manifest(bundle: Bundle) -> str:
    body: Fields = {
        "format": FORMAT,
        "exported_at": bundle.exported_at,
        "documents": [
            {"path": d.path, "bytes": len(d.data), "sha256": hashlib.sha256(d.data).hexdigest()}
            for d in bundle.documents
        ],
        "checks": [{"scope": c.scope, "query": c.query, "first": c.first} for c in bundle.checks],
    }
    return versioned.encode(VERSION, body, indent=1)


Read = Callable[[str], bytes]  # a bundle's file by its name in the bundle


def _parsed(read: Read) -> Bundle:
    try:
        manifest = json.loads(read(MANIFEST))
    except (ValueError, UnicodeDecodeError) as exc:
        raise BundleError(f"{MANIFEST} is not JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BundleError(f"{MANIFEST} is not a Mnemo memory bundle's")
    try:
        manifest = versioned.fields(manifest, VERSION)
    except versioned.VersionError:
        raise BundleError(
            f"bundle version {manifest.get('version')!r}; this bot reads {VERSION}"
        ) from None
    try:
        documents = tuple(_document(entry, read) for entry in objects(manifest["documents"]))
        checks = tuple(
            Check(str(c["scope"]), str(c["query"]), str(c["first"]))
            for c in objects(manifest["checks"])
        )
    except (KeyError, TypeError) as exc:
        raise BundleError(f"{MANIFEST} lacks a field or has a wrong one ({exc})") from None
    return Bundle(str(manifest.get("exported_at", "")), documents, checks)


def _document(entry: Fields, read: Read) -> Document:
    path = safe_path(str(entry["path"]))
    data = read(f"{FOLDER}/{path}")
    if len(data) != entry["bytes"] or hashlib.sha256(data).hexdigest() != entry["sha256"]:
        raise BundleError(f"{path} is not what the manifest says (size or digest differ)")
    return Document(path, data)


def safe_path(path: str) -> str:
    """`path` when it is relative and stays inside; `BundleError` otherwise."""
    pure = PurePosixPath(path)
    if not path or pure.is_absolute() or any(part in ("", ".", "..") for part in pure.parts):
        raise BundleError(f"unsafe path in the bundle: {path!r}")
    if "\\" in path or "\x00" in path:
        raise BundleError(f"unsafe path in the bundle: {path!r}")
    return pure.as_posix()


def _read_file(root: Path, name: str) -> bytes:
    path = root / name
    if path.is_symlink() or not path.is_file():
        raise BundleError(f"{name} is missing from the bundle (or not a plain file)")
    return path.read_bytes()


def _read_member(tar: tarfile.TarFile, name: str) -> bytes:
    try:
        member = tar.getmember(name)
    except KeyError:
        raise BundleError(f"{name} is missing from the bundle") from None
    extracted = tar.extractfile(member) if member.isfile() else None
    if extracted is None:
        raise BundleError(f"{name} is not a plain file in the bundle")
    return extracted.read()


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o600
    tar.addfile(info, io.BytesIO(data))
