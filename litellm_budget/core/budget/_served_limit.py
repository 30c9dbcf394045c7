"""
The limit a backend's context-length error states: a served model's window is what its server was started with (vLLM's
``--max-model-len``, llama.cpp's ``--ctx-size``), which LiteLLM's model map cannot know. Each wording is copied from the
server's source, else as reported verbatim, never guessed; ``is_context_error`` also knows those with no number.
"""

from __future__ import annotations

import dataclasses
import re

# A count as the sources print it; thousands separators are tolerated though no source seen writes them.
_NUMBER = r"\d{1,3}(?:,\d{3})+(?!\d)|\d+"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ServedLimit:
    """What a backend's context-length error says it holds."""

    #: The most tokens the backend takes in one request (its context, or its max input).
    limit: int
    #: The backend's own count of the failed request's input, where the error states it.
    counted: int | None
    #: Which wording matched, named for the source that writes it ("vllm", "llama.cpp", ...).
    backend: str
    #: True where ``limit`` is the whole context (prompt + completion), as vLLM's max_model_len.
    includes_output: bool


def _wording(template: str) -> re.Pattern[str]:
    """``template`` with its ``{limit}``-style fields as number groups, and a space as any run of whitespace."""
    for field in ("limit", "counted", "total", "output"):
        number = f"{_NUMBER}|None" if field == "output" else _NUMBER
        template = template.replace("{" + field + "}", f"(?P<{field}>{number})")
    return re.compile(template.replace(" ?", r"\s*").replace(" ", r"\s+"), re.IGNORECASE)


def _wordings(backend: str, whole: bool, *templates: str) -> tuple[tuple[str, bool, re.Pattern[str]], ...]:
    """One backend's wordings; ``whole``: their limit is the whole context, prompt and completion."""
    return tuple((backend, whole, _wording(template)) for template in templates)


#: (backend, limit is the whole context, pattern); the first that matches is read. ``counted`` is
#: read directly, else as ``total`` less ``output`` (what the request reserved for the answer).
_WORDINGS: tuple[tuple[str, bool, re.Pattern[str]], ...] = (
    *_wordings(
        "vllm",
        True,
        # vLLM 0.20-0.34, vllm/renderers/params.py (_token_len_check, _text_len_check).
        r"maximum context length is {limit} tokens\. However, (?:you requested \d+ output tokens and )?"
        r"your prompt contains (?:at least )?(?:{counted} input tokens|\d+ characters)",
        # vLLM 0.17, vllm/renderers/params.py (_token_len_check, _text_len_check).
        r"You passed (?:{counted} input tokens|\d+ input characters) and requested \d+ output tokens\. "
        r"However, the model's context length is only {limit} tokens",
        # vLLM 0.10-0.17, vllm/entrypoints/openai/serving_engine.py (_validate_input; engine/serving.py
        # in 0.17) and vllm/entrypoints/renderer.py; the second is its max_tokens check.
        r"maximum context length is {limit} tokens(?:\. However,| and) your request has {counted} input tokens",
        # vLLM 0.6-0.17, the same _validate_input: embeddings, and (<= 0.9) chat without max_tokens.
        r"maximum context length is {limit} tokens\. However, you requested {counted} tokens in the",
        # vLLM <= 0.9, the same _validate_input; word for word llama-cpp-python's llama_cpp/server/errors.py
        # (chat) and OpenAI's API, which puts "N in the functions, and" before the completion.
        r"maximum context length is {limit} tokens\. However, you requested {total} tokens "
        r"\([^)]*?{output} in the completion\)",
        # vLLM 0.10-0.34, vllm/v1/engine/input_processor.py (v1/engine/processor.py before).
        r"The decoder prompt \(length {counted}\) (?:plus the number of requested output tokens "
        r"\(at least 1\) )?is longer than the maximum model length of {limit}",
        # vLLM 0.17-0.34, vllm/renderers/params.py (TokenizeParams.__post_init__): max_tokens over max_model_len.
        r"\w+={output} ?cannot be greater than max_model_len=(?:max_total_tokens=)?{limit}",
    ),
    # llama.cpp, tools/server/server-context.cpp (update_slots), n_prompt_tokens and n_ctx beside it.
    *_wordings(
        "llama.cpp",
        True,
        r"request \({counted} tokens\) exceeds the available context size \({limit} tokens\)",
        r"input \({counted} tokens\) is larger than the max context size \({limit} tokens\)",
    ),
    *_wordings(
        "llama-cpp-python",
        True,
        # llama_cpp/server/errors.py (text completion; OpenAI's legacy completions wrote the same).
        r"maximum context length is {limit} tokens, however you requested {total} tokens "
        r"\([^)]*?{output} for the completion\)",
        # llama_cpp/llama.py (_create_completion) and llama_cpp/llama_chat_format.py (Llava15ChatHandler).
        r"Requested tokens \({counted}\) exceed context window of {limit}",
        r"Prompt exceeds n_ctx: {counted} > {limit}",
    ),
    # SGLang, python/sglang/srt/managers/tokenizer_manager.py (_validate_one_request).
    *_wordings(
        "sglang",
        True,
        r"The input \({counted} tokens\) is longer than the model's context length \({limit} tokens\)",
        r"maximum context length of {limit} tokens\. You requested a total of \d+ tokens: {counted} tokens from",
    ),
    # SGLang, python/sglang/srt/managers/utils.py (validate_input_length): its max_req_input_len.
    *_wordings(
        "sglang", False, r"Input length \({counted} tokens\) exceeds the maximum allowed length \({limit} tokens"
    ),
    # TGI, router/src/validation.rs (ValidationError::MaxTotalTokens, then ::InputLength).
    *_wordings("tgi", True, r"`inputs` tokens \+ `max_new_tokens` must be <= {limit}\. Given: {counted} `inputs`"),
    *_wordings("tgi", False, r"`inputs` must have less than {limit} tokens\. Given: {counted}"),
    # LM Studio (closed source), lmstudio-ai/lmstudio-bug-tracker #546, #2256 and #1251; openhuman #3550.
    *_wordings(
        "lm-studio",
        True,
        r"Trying to keep the first {counted} tokens when context the overflows\. However, the model is "
        r"loaded with context length of only {limit} tokens",
        r"\(n_keep: ?{counted} ?>= ?n_ctx: ?{limit}\)",
        r"Cannot truncate prompt with n_keep \({counted}\) >= n_ctx \({limit}\)",
        r"Reached context length of {limit} tokens with model",
    ),
    # OpenAI chat completions (closed source), as quoted with code context_length_exceeded (NextChat #2358).
    *_wordings(
        "openai", True, r"maximum context length is {limit} tokens\. However, your messages resulted in {counted}"
    ),
    # Anthropic, in anthropics/claude-code #12186 and #228; Bedrock relays the first after
    # "The model returned the following errors: ".
    *_wordings("anthropic", False, r"prompt is too long: {counted} tokens > {limit} maximum"),
    *_wordings("anthropic", True, r"input length and `?max_tokens`? exceed context limit: {counted} \+ \d+ > {limit}"),
    # Amazon Bedrock (Titan), aws-samples/amazon-bedrock-workshop #136.
    *_wordings(
        "bedrock", False, r"Too many input tokens\. Max input tokens: {limit}, request input token count: {counted}"
    ),
    # Mistral (closed source), as its API's body quotes it (type invalid_request_invalid_args, code 3051).
    *_wordings(
        "mistral",
        True,
        r"Prompt contains {counted} tokens and \d+ draft tokens, too large for model with {limit} maximum context",
    ),
    # OpenRouter (closed source), as quoted in Aider-AI/aider #3721 and OpenHands/OpenHands #9937.
    *_wordings(
        "openrouter",
        True,
        r"This endpoint's maximum context length is {limit} tokens\. However, you requested about {total} tokens"
        r"(?: \([^)]*?(?:{output} in the output)?\))?",
    ),
    # Gemini, as quoted in google-gemini/gemini-cli #6678 and googleapis/python-genai #2466.
    *_wordings(
        "gemini",
        False,
        r"The input token count(?: \({counted}\))? exceeds the maximum number of tokens allowed \({limit}\)",
    ),
)

#: Context-length wordings that name no number: they make an error a context error, and no more.
_UNNUMBERED: tuple[re.Pattern[str], ...] = tuple(
    _wording(template)
    for template in (
        # llama.cpp, tools/server/server.cpp (2025, before server-context.cpp) and ggml-org/llama.cpp #15780.
        r"the request exceeds the available context size",
        r"input is larger than the max context size",
        r"exceed_context_size_error",
        # Ollama, llm/llama_server.go (completionPromptForRequest) and server/routes.go (embed, truncate=false).
        r"the prompt is longer than the context length currently available to the model",
        r"the input length exceeds the context length",
        r"input (?:after truncation )?exceeds maximum context length",
        # LM Studio, lmstudio-ai/lmstudio-bug-tracker #2205.
        r"The number of tokens to keep from the initial prompt is greater than the context length",
        # OpenAI's Responses API (dyad-sh/dyad #1672) and OpenAI's error code.
        r"Your input exceeds the context window of this model",
        r"\bcontext_length_exceeded\b",
        # Amazon Bedrock, aws-samples/bedrock-chat #95 (and after "The model returned the following errors: ").
        r"Input is too long for requested model",
    )
)

#: llama.cpp's token counts beside its message, in JSON or in a Python repr of it, escaped or not.
_LLAMA_CPP_COUNTED = re.compile(r"""["']?\bn_prompt_tokens\\?["']?\s*:\s*(\d+)""")
_LLAMA_CPP_LIMIT = re.compile(r"""["']?\bn_ctx\\?["']?\s*:\s*(\d+)""")


def _count(digits: str) -> int:
    return int(digits.replace(",", ""))


def _read(found: re.Match[str], backend: str, whole: bool) -> ServedLimit:
    fields = found.groupdict()
    counted: int | None = None
    if fields.get("counted"):
        counted = _count(fields["counted"])
    elif fields.get("total"):
        output = fields.get("output") or "0"
        counted = _count(fields["total"]) - (_count(output) if output[0].isdigit() else 0)
    return ServedLimit(limit=_count(fields["limit"]), counted=counted, backend=backend, includes_output=whole)


def served_limit(text: str) -> ServedLimit | None:
    """The limit a context-length error states; None for any other error (or one that names no number)."""
    for backend, whole, pattern in _WORDINGS:
        found = pattern.search(text)
        if found is not None:
            return _read(found, backend, whole)
    if "exceed_context_size_error" in text:
        limit, counted = _LLAMA_CPP_LIMIT.search(text), _LLAMA_CPP_COUNTED.search(text)
        if limit is not None:
            return ServedLimit(
                limit=int(limit[1]),
                counted=None if counted is None else int(counted[1]),
                backend="llama.cpp",
                includes_output=True,
            )
    return None


def is_context_error(text: str) -> bool:
    """Whether ``text`` is any backend's context-length error, numbers or not."""
    return served_limit(text) is not None or any(pattern.search(text) for pattern in _UNNUMBERED)
