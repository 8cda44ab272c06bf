"""Memory moved between machines: `python -m bot memory export DIR|FILE` and `import`.

    bundle.py   the format, one owner: a manifest (every document's path under `memory/`, its
                size and SHA-256, and the searches that check an import) and the documents'
                bytes, as a folder or one .tar.gz file; read back checked (safe paths, digests)
    moving.py   a workspace's memory as documents (markdown, items with their metadata and
                their forgotten and decayed ones, documents' text, working memory) and back:
                an import refuses a memory that is not empty unless forced, and then sets the
                old one aside (`memory.before-import-…/`) instead of overwriting it

The bundle names each document by its path relative to the memory root, so a store that keeps
documents elsewhere (a database) can write and read the same bundle.
"""

from bot.memory.transfer.bundle import (
    Bundle,
    BundleError,
    Check,
    Document,
    read_bundle,
    write_bundle,
)
from bot.memory.transfer.moving import documents_of, import_documents, memory_is_empty

__all__ = [
    "Bundle",
    "BundleError",
    "Check",
    "Document",
    "documents_of",
    "import_documents",
    "memory_is_empty",
    "read_bundle",
    "write_bundle",
]
