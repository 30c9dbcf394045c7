"""Load tiktoken encodings from files on disk only: the request path never downloads."""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.util
import os
import types
from collections.abc import Iterable
from pathlib import Path

import tiktoken


class EncodingUnavailableError(LookupError):
    """The encoding's file is on none of the searched folders."""


def search_dirs() -> list[Path]:
    """
    Folders that may hold tiktoken's cache files, in tiktoken's own order, then LiteLLM's ``tokenizers``
    (cl100k_base, o200k_base, p50k_base), found without importing litellm or setting ``TIKTOKEN_CACHE_DIR``.
    """
    dirs = [os.environ.get(name) for name in ("TIKTOKEN_CACHE_DIR", "CUSTOM_TIKTOKEN_CACHE_DIR")]
    return [Path(d) for d in (*dirs, _litellm_tokenizers_dir()) if d]


def load_offline(name: str, dirs: Iterable[Path] | None = None) -> tiktoken.Encoding | None:
    """The encoding ``name`` built from local files, or ``None`` when they are missing."""
    return _build(name, tuple(search_dirs() if dirs is None else dirs))


@functools.cache
def _build(name: str, dirs: tuple[Path, ...]) -> tiktoken.Encoding | None:
    from tiktoken_ext import openai_public

    constructor = getattr(openai_public, name, None)
    if not isinstance(constructor, types.FunctionType):
        return None

    # tiktoken's constructors know each encoding's pattern and special tokens but fetch the rank file over HTTP
    # on a cache miss: their code, run with a local-only reader in its globals, keeps them and cannot download.
    offline = types.FunctionType(
        constructor.__code__,
        {**vars(openai_public), "load_tiktoken_bpe": functools.partial(_read_ranks, dirs=list(dirs))},
        constructor.__name__,
    )
    try:
        params = offline()
    except EncodingUnavailableError:
        return None
    return tiktoken.Encoding(**params)


def _read_ranks(url: str, expected_hash: str | None = None, *, dirs: list[Path]) -> dict[bytes, int]:
    file_name = hashlib.sha1(url.encode()).hexdigest()  # noqa: S324 - tiktoken's cache naming
    for folder in dirs:
        path = folder / file_name
        if not path.is_file():
            continue
        data = path.read_bytes()
        if expected_hash and hashlib.sha256(data).hexdigest() != expected_hash:
            continue
        return {
            base64.b64decode(token): int(rank) for token, rank in (line.split() for line in data.splitlines() if line)
        }
    raise EncodingUnavailableError(url)


def _litellm_tokenizers_dir() -> Path | None:
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
    return folder if folder.is_dir() else None
