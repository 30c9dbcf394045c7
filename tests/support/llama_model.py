"""A tiny Llama 3 model for a real llama.cpp server in tests: the real tokenizer, random weights.

Why: a real server counts tokens with the real Llama 3 tokenizer and enforces ``--n_ctx`` with a
real HTTP 400, which no fake does; a real model is gigabytes. llama.cpp's own sources ship the
Llama 3 vocabulary as a weightless GGUF (``vendor/llama.cpp/models/ggml-vocab-llama-bpe.gguf`` in
the ``llama-cpp-python`` sdist). :func:`make_tiny_model` copies its tokenizer into a 2-layer,
64-wide llama with seeded random weights (~24 MB, loads in about a second); it answers nonsense,
quickly, and that is all the tests need.

Where the vocabulary comes from, in order: ``$LITELLM_BUDGET_LLAMA_VOCAB``; the copy extracted
under ``~/.cache/litellm-budget/llama/``; extracted from the sdist there; the sdist downloaded
there with pip. ``python -m tests.support.llama_model`` fetches it and makes the model (``.ci/llama``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np

__all__ = ["CACHE_DIR", "LLAMA_CPP_VERSION", "make_tiny_model", "tiny_model", "vocab_file"]

ENV_VOCAB = "LITELLM_BUDGET_LLAMA_VOCAB"
LLAMA_CPP_VERSION = "0.3.36"
CACHE_DIR = Path.home() / ".cache" / "litellm-budget" / "llama"
VOCAB_NAME = "ggml-vocab-llama-bpe.gguf"
_MEMBER = f"llama_cpp_python-{LLAMA_CPP_VERSION}/vendor/llama.cpp/models/{VOCAB_NAME}"

#: llama-cpp-python's own Llama 3 template, verbatim: its server recognises it and uses "llama-3".
LLAMA3_CHAT_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + "
    "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)

#: The same template, one comment longer: the server no longer recognises it, and renders it with
#: its Jinja formatter, which keeps every message (its own "llama-3" leaves tool results out).
EVERY_ROLE_CHAT_TEMPLATE = LLAMA3_CHAT_TEMPLATE + "{# every role #}"

# The shape: small enough to load at once, a real llama graph all the same (GQA: 4 heads, 2 KV heads).
N_EMBD, N_LAYERS, N_HEAD, N_HEAD_KV, N_FF = 64, 2, 4, 2, 128
CONTEXT_LENGTH = 8192  # what the model claims; the server's --n_ctx is the window the tests set


def make_tiny_model(vocab_gguf: Path, out: Path, *, seed: int = 0, template: str = LLAMA3_CHAT_TEMPLATE) -> Path:
    """Write the tiny model to ``out``: ``vocab_gguf``'s tokenizer fields, seeded random f16 weights."""
    from gguf import GGUFReader, GGUFValueType, GGUFWriter, LlamaFileType

    reader = GGUFReader(vocab_gguf)
    n_vocab = len(reader.fields["tokenizer.ggml.tokens"].data)
    head_dim = N_EMBD // N_HEAD
    writer = GGUFWriter(out, "llama")
    writer.add_name("litellm-budget tiny llama3 (random weights)")
    writer.add_context_length(CONTEXT_LENGTH)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(N_LAYERS)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD_KV)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(500000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(n_vocab)
    writer.add_file_type(LlamaFileType.MOSTLY_F16)
    for key, field in reader.fields.items():
        if key.startswith("tokenizer."):
            array = field.types[0] == GGUFValueType.ARRAY
            writer.add_key_value(key, field.contents(), field.types[0], field.types[-1] if array else None)
    writer.add_chat_template(template)

    rng = np.random.default_rng(seed)

    def weight(rows: int, cols: int) -> np.ndarray:  # numpy's (rows, cols) is GGUF's [cols, rows]
        return (rng.standard_normal((rows, cols), dtype=np.float32) * 0.02).astype(np.float16)

    ones = np.ones(N_EMBD, dtype=np.float32)  # norms stay f32, as llama.cpp wants
    # No output.weight: llama.cpp then ties the output to token_embd, which halves the file.
    writer.add_tensor("token_embd.weight", weight(n_vocab, N_EMBD))
    writer.add_tensor("output_norm.weight", ones)
    for i in range(N_LAYERS):
        blk = f"blk.{i}"
        writer.add_tensor(f"{blk}.attn_norm.weight", ones)
        writer.add_tensor(f"{blk}.attn_q.weight", weight(N_EMBD, N_EMBD))
        writer.add_tensor(f"{blk}.attn_k.weight", weight(N_HEAD_KV * head_dim, N_EMBD))
        writer.add_tensor(f"{blk}.attn_v.weight", weight(N_HEAD_KV * head_dim, N_EMBD))
        writer.add_tensor(f"{blk}.attn_output.weight", weight(N_EMBD, N_EMBD))
        writer.add_tensor(f"{blk}.ffn_norm.weight", ones)
        writer.add_tensor(f"{blk}.ffn_gate.weight", weight(N_FF, N_EMBD))
        writer.add_tensor(f"{blk}.ffn_up.weight", weight(N_FF, N_EMBD))
        writer.add_tensor(f"{blk}.ffn_down.weight", weight(N_EMBD, N_FF))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def _sdist(download: bool) -> Path | None:
    """The llama-cpp-python sdist in the cache, downloaded there with pip when allowed and missing."""
    found = sorted(CACHE_DIR.glob(f"llama_cpp_python-{LLAMA_CPP_VERSION}.tar.gz"))
    if found or not download:
        return found[0] if found else None
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:"]
    argv += [f"llama-cpp-python=={LLAMA_CPP_VERSION}", "-d", str(CACHE_DIR)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        print(f"pip download of the llama-cpp-python sdist failed: {done.stderr[-500:]}", file=sys.stderr)
    return _sdist(download=False)


def vocab_file(*, download: bool = True) -> Path | None:
    """The Llama 3 vocabulary GGUF: named, cached, or extracted from the (downloaded) sdist; None if none."""
    named = os.environ.get(ENV_VOCAB)
    if named:
        return Path(named) if Path(named).is_file() else None
    cached = CACHE_DIR / VOCAB_NAME
    if cached.is_file():
        return cached
    sdist = _sdist(download)
    if sdist is None:
        return None
    with tarfile.open(sdist) as archive:
        member = archive.extractfile(_MEMBER)
        if member is None:
            return None
        partial = cached.with_suffix(f".{os.getpid()}.part")
        partial.write_bytes(member.read())
    partial.replace(cached)  # atomic: a parallel worker sees the whole file or none
    return cached


def tiny_model(vocab_gguf: Path, *, every_role: bool = False) -> Path:
    """
    The tiny model made from ``vocab_gguf``, cached by the vocabulary's size (made once per machine);
    ``every_role``: with ``EVERY_ROLE_CHAT_TEMPLATE``, so the server reads tool results too.
    """
    name = "tiny-llama3-every-role" if every_role else "tiny-llama3"
    out = CACHE_DIR / f"{name}-{vocab_gguf.stat().st_size}.gguf"
    if not out.is_file():
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        template = EVERY_ROLE_CHAT_TEMPLATE if every_role else LLAMA3_CHAT_TEMPLATE
        partial = make_tiny_model(vocab_gguf, out.with_suffix(f".{os.getpid()}.part"), template=template)
        partial.replace(out)
    return out


if __name__ == "__main__":
    vocab = vocab_file()
    if vocab is None:
        sys.exit("no Llama 3 vocabulary: the llama-cpp-python sdist could not be downloaded")
    print(f"vocabulary: {vocab}\nmodel: {tiny_model(vocab)}")
