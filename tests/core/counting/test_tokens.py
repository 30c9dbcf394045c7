"""Counting: the model's encoding, offline, memoized, linear, and close to LiteLLM's own count."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import litellm
import pytest
from structlog.testing import capture_logs

from litellm_budget.core import DECLARED, EXACT_KEY_CHARS
from litellm_budget.core.counting import (
    CHUNK_CHARS,
    MemoCounter,
    counter_for,
    encoding_name_for,
    estimate_tokens,
    forget_counts,
    load_offline,
    reset_counters,
    split_chunks,
)
from tests.conftest import SessionSet
from tests.support.builders import agent_session, text


@pytest.fixture(name="no_network")
def fixture_no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    return


class TestEncoding:
    @pytest.mark.parametrize(
        ("model", "encoding"),
        [
            ("gpt-4o", "o200k_base"),
            ("openai/gpt-4o-mini", "o200k_base"),
            ("azure/gpt-4.1", "o200k_base"),
            ("gpt-5-mini", "o200k_base"),
            ("o3-mini", "o200k_base"),
            ("openrouter/openai/o4-mini", "o200k_base"),
            ("gpt-4-turbo", "cl100k_base"),
            ("claude-sonnet-4-5", "cl100k_base"),
            ("ollama/llama3", "cl100k_base"),
            ("o10-custom", "cl100k_base"),
        ],
    )
    def test_encoding_by_family(self, model: str, encoding: str) -> None:
        """o200k for gpt-4o/4.1/4.5/5 and the o-series, cl100k otherwise; the provider prefix does not matter."""
        assert encoding_name_for(model) == encoding

    def test_loads_offline_from_litellm(self, no_network: None) -> None:
        """Both encodings load from LiteLLM's bundled files with the network unreachable."""
        sample = "def héllo():\n    return {'wörld': 42}  # 日本語"
        for name, model in (("o200k_base", "gpt-4o"), ("cl100k_base", "gpt-4")):
            encoding = load_offline(name)
            assert encoding is not None
            assert len(encoding.encode_ordinary(sample)) == litellm.token_counter(model=model, text=sample)

    def test_missing_files_fall_back_to_an_estimate(
        self, no_network: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With no encoding file anywhere and no network: one warning event, then a safe estimate."""
        monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
        monkeypatch.setattr("litellm_budget.core.counting._encodings._litellm_tokenizers_dir", lambda: None)
        reset_counters()
        try:
            with capture_logs() as logs:
                first = counter_for("gpt-4o")
                second = counter_for("gpt-4o")
            count = first.count_text(text(1000))
        finally:
            reset_counters()

        assert first is second
        assert first.name == "estimate"
        assert [log["event"] for log in logs] == ["tokenizer_unavailable"]
        assert count >= 1000


class TestCounting:
    def test_matches_litellm_token_counter(self) -> None:
        """A tool-using conversation counts within 2% of litellm.token_counter."""
        messages = agent_session(20, 700)
        counter = counter_for("gpt-4o")

        ours = sum(counter.count_message(m) for m in messages) + counter.count_tools(None)
        theirs = litellm.token_counter(model="gpt-4o", messages=messages)

        assert abs(ours - theirs) / theirs < 0.02

    def test_tools_schema_is_counted(self) -> None:
        """A tools schema adds its tokens to every request."""
        counter = counter_for("gpt-4o")
        tools = [
            {
                "type": "function",
                "function": {"name": "bash", "description": text(200), "parameters": {"type": "object"}},
            }
        ]

        assert counter.count_tools(tools) > counter.count_tools(None) + 200

    def test_images_cost_the_configured_fixed_amount(self) -> None:
        """An image part costs image_tokens, whatever its URL."""
        image = {
            "role": "user",
            "content": [{"type": "image_url", "image_url": {"url": "https://example.invalid/x.png"}}],
        }
        small = counter_for("gpt-4o", image_tokens=100).count_message(image)
        large = counter_for("gpt-4o", image_tokens=1000).count_message(image)

        assert large - small == 900

    def test_estimate_over_counts_real_text(self, replay_set: SessionSet) -> None:
        """The fallback estimate is above the real count on every message of the agent sessions."""
        counter = counter_for("gpt-4o")
        for messages in replay_set.sessions.values():
            for message in messages:
                content = message.get("content")
                if isinstance(content, str) and len(content) > 200:
                    assert estimate_tokens(content) >= counter.count_text(content)

    def test_estimate_over_counts_cjk_and_emoji(self) -> None:
        """The estimate stays high on scripts that pack many bytes into few characters."""
        counter = counter_for("gpt-4o")
        for sample in ("日本語のテキストです。" * 200, "😀🎉🚀" * 300, "Ünïcödé façade " * 200):
            assert estimate_tokens(sample) >= counter.count_text(sample)


class TestLinearTime:
    def test_chunks_cover_the_text(self) -> None:
        """Chunks are contiguous, bounded, and rejoin to the text."""
        sample = text(5000) + "=" * 10_000
        chunks = list(split_chunks(sample))

        assert "".join(chunks) == sample
        assert max(len(c) for c in chunks) <= CHUNK_CHARS

    def test_one_long_run_is_linear(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """
        A long run of one character (quadratic for plain BPE) is tokenized in pieces of at most
        ``CHUNK_CHARS``, each character at most once: its cost grows linearly with its length.
        """
        counter = counter_for("gpt-4o")
        measure, pieces = counter._measure, list[int]()  # the tokenizer's own count; the length of each piece it got

        def measured(piece: str) -> int:
            pieces.append(len(piece))
            return measure(piece)

        monkeypatch.setattr(counter, "_measure", measured)
        sample = "=" * 1_000_000 + "linear"
        counter.count_text(sample)

        assert max(pieces) <= CHUNK_CHARS
        assert sum(pieces) <= len(sample)


class TestMemo:
    def test_cache_is_bounded(self) -> None:
        """The text cache never holds more than its bound."""
        counter = counter_for("gpt-4o")
        for i in range(3 * DECLARED["text_counts"].entries):
            counter.count_text(f"unique text {i}")

        assert len(counter.memo) <= DECLARED["text_counts"].entries

    def test_long_texts_are_keyed_by_hash(self) -> None:
        """Long texts are not kept as keys, so the cache's memory stays bounded."""
        counter = counter_for("gpt-4o")
        long_text = text(5000, 3)
        counter.count_text(long_text)

        assert all(not (isinstance(k, str) and len(k) > EXACT_KEY_CHARS) for k in counter.memo.cached_keys())

    def test_a_text_that_extends_a_counted_one_is_tokenized_from_where_it_differs(self) -> None:
        """
        The task with the marker's note joined to its end (a refit's merged user message) costs the
        note and one chunk, not the task again; and it counts what a fresh count of the whole gives.
        """
        encoding = load_offline("o200k_base")
        assert encoding is not None
        measured: list[int] = []

        def measure(piece: str) -> int:
            measured.append(len(piece))
            return len(encoding.encode_ordinary(piece))

        counter = MemoCounter("recording", measure, 765, chunked=True)
        task = text(6000, 1)  # about 24k characters: a dozen chunks
        note = '\n\n[litellm_budget: 12 earlier messages were removed]\n- called bash(command="ls") -> 3 lines'
        counter.count_text(task)
        measured.clear()

        merged = counter.count_text(task + note)

        assert sum(measured) <= CHUNK_CHARS + len(note)
        assert merged == sum(len(encoding.encode_ordinary(chunk)) for chunk in split_chunks(task + note))
        assert merged == counter_for("gpt-4o").count_text(task + note)

    def test_chunks_are_remembered_as_texts_keyed_by_hash(self) -> None:
        """A long text's chunks are texts of their own: each is remembered, none held whole when long."""
        counter = counter_for("gpt-4o")
        forget_counts()
        long = text(5000, 4)
        counter.count_text(long)

        chunks = list(split_chunks(long))
        assert len(chunks) > 1
        assert all(counter.remembers(chunk) for chunk in chunks)
        assert 0 < len(counter.memo) <= DECLARED["text_counts"].entries
        assert all(not (isinstance(k, str) and len(k) > EXACT_KEY_CHARS) for k in counter.memo.cached_keys())
