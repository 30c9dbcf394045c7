"""served_limit / is_context_error: each backend's context-length error, as its source words it, and no other."""

from __future__ import annotations

import pytest

from litellm_budget.core.budget import ServedLimit, is_context_error, served_limit

# (wording, the error as the backend sends it, limit, counted, backend); the numbers are filled in.
_EXAMPLES = [
    (
        "vllm 0.20-0.25 tokens",
        "This model's maximum context length is 8192 tokens. However, you requested 64 output tokens and your "
        "prompt contains at least 8129 input tokens, for a total of at least 8193 tokens. Please reduce the length "
        "of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=8129)",
        8192,
        8129,
        "vllm",
    ),
    (
        "vllm 0.20-0.25 characters",
        "This model's maximum context length is 8192 tokens. However, you requested 64 output tokens and your "
        "prompt contains 100000 characters (more than 81280 characters, which is the upper bound for 8128 input "
        "tokens). Please reduce the length of the input prompt or the number of requested output tokens.",
        8192,
        None,
        "vllm",
    ),
    (
        "vllm 0.34 tokens",
        "This model's maximum context length is 4096 tokens. However, your prompt contains 5000 input tokens, "
        "which exceeds this limit even without any output tokens. Please reduce the length of the input prompt.",
        4096,
        5000,
        "vllm",
    ),
    (
        "vllm 0.34 characters",
        "This model's maximum context length is 4096 tokens. However, your prompt contains 50000 characters (more "
        "than 40960 characters, which is the upper bound for 4096 input tokens). Please reduce the length of the "
        "input prompt. (parameter=input_text, value=50000)",
        4096,
        None,
        "vllm",
    ),
    (
        "vllm 0.17 tokens",
        "You passed 5000 input tokens and requested 100 output tokens. However, the model's context length is only "
        "4096 tokens, resulting in a maximum input length of 3996 tokens. Please reduce the length of the input "
        "prompt. (parameter=input_tokens, value=5000)",
        4096,
        5000,
        "vllm",
    ),
    (
        "vllm 0.17 characters",
        "You passed 50000 input characters and requested 100 output tokens. However, the model's context length is "
        "only 4096 tokens, resulting in a maximum input length of 3996 tokens (at most 39960 characters). Please "
        "reduce the length of the input prompt.",
        4096,
        None,
        "vllm",
    ),
    (
        "vllm 0.10-0.17 input tokens",
        "This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens. Please "
        "reduce the length of the input messages.",
        4096,
        5000,
        "vllm",
    ),
    (
        "vllm 0.10-0.17 max_tokens",
        "'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum context length is 4096 "
        "tokens and your request has 2778 input tokens (8000 > 4096 - 2778).",
        4096,
        2778,
        "vllm",
    ),
    (
        "vllm embeddings",
        "This model's maximum context length is 512 tokens. However, you requested 600 tokens in the input for "
        "embedding generation. Please reduce the length of the input.",
        512,
        600,
        "vllm",
    ),
    (
        "vllm <= 0.9 chat without max_tokens",
        "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens in the messages, "
        "Please reduce the length of the messages.",
        4096,
        5000,
        "vllm",
    ),
    (
        "vllm <= 0.9 chat",
        "This model's maximum context length is 4096 tokens. However, you requested 4120 tokens (3120 in the "
        "messages, 1000 in the completion). Please reduce the length of the messages or completion.",
        4096,
        3120,
        "vllm",
    ),
    (
        "vllm decoder prompt",
        "The decoder prompt (length 3000) is longer than the maximum model length of 2048. Make sure that "
        "`max_model_len` is no smaller than the number of text tokens.",
        2048,
        3000,
        "vllm",
    ),
    (
        "vllm decoder prompt plus output",
        "The decoder prompt (length 2048) plus the number of requested output tokens (at least 1) is longer than "
        "the maximum model length of 2048. Make sure that `max_model_len` is no smaller than the number of text "
        "tokens (prompt + requested output tokens).",
        2048,
        2048,
        "vllm",
    ),
    (
        "vllm 0.20-0.34 max_tokens over max_model_len",
        "max_completion_tokens=131072 cannot be greater than max_model_len=65536. Please request fewer output "
        "tokens. (parameter=max_completion_tokens, value=131072)",
        65536,
        None,
        "vllm",
    ),
    (
        "vllm 0.17 max_tokens over max_model_len",
        "max_tokens=131072cannot be greater than max_model_len=max_total_tokens=65536. Please request fewer "
        "output tokens.",
        65536,
        None,
        "vllm",
    ),
    (
        "llama.cpp request",
        "request (2418 tokens) exceeds the available context size (2048 tokens), try increasing it",
        2048,
        2418,
        "llama.cpp",
    ),
    (
        "llama.cpp non-causal input",
        "input (2418 tokens) is larger than the max context size (2048 tokens). skipping",
        2048,
        2418,
        "llama.cpp",
    ),
    (
        "llama.cpp JSON fields",
        '{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it",'
        '"type":"exceed_context_size_error","n_prompt_tokens":2418,"n_ctx":2048}}',
        2048,
        2418,
        "llama.cpp",
    ),
    (
        "llama.cpp JSON fields, first wording (#15780)",
        '{"error":{"code":500,"message":"the request exceeds the available context size. try increasing the '
        'context size or enable context shift","type":"exceed_context_size_error","n_prompt_tokens":1407,'
        '"n_ctx":256}}',
        256,
        1407,
        "llama.cpp",
    ),
    (
        "llama.cpp JSON fields in LiteLLM's str",
        "litellm.BadRequestError: OpenAIException - Error code: 400 - {'error': {'code': 400, 'message': 'the "
        "request exceeds the available context size, try increasing it', 'type': 'exceed_context_size_error', "
        "'n_prompt_tokens': 2418, 'n_ctx': 2048}}",
        2048,
        2418,
        "llama.cpp",
    ),
    (
        "llama-cpp-python chat, vLLM's words",
        "This model's maximum context length is 2048 tokens. However, you requested 2285 tokens (2285 in the "
        "messages, None in the completion). Please reduce the length of the messages or completion.",
        2048,
        2285,
        "vllm",
    ),
    (
        "llama-cpp-python completion",
        "This model's maximum context length is 2048 tokens, however you requested 2285 tokens (2029 in your "
        "prompt; 256 for the completion). Please reduce your prompt; or completion length.",
        2048,
        2029,
        "llama-cpp-python",
    ),
    (
        "llama-cpp-python library",
        "Requested tokens (2285) exceed context window of 2048",
        2048,
        2285,
        "llama-cpp-python",
    ),
    ("llama-cpp-python llava", "Prompt exceeds n_ctx: 2892 > 2048", 2048, 2892, "llama-cpp-python"),
    (
        "sglang input",
        "The input (40000 tokens) is longer than the model's context length (32768 tokens).",
        32768,
        40000,
        "sglang",
    ),
    (
        "sglang total",
        "Requested token count exceeds the model's maximum context length of 32768 tokens. You requested a total of "
        "34000 tokens: 30000 tokens from the input messages and 4000 tokens for the completion. Please reduce the "
        "number of tokens in the input messages or the completion to fit within the limit.",
        32768,
        30000,
        "sglang",
    ),
    (
        "sglang scheduler",
        "Input length (40000 tokens) exceeds the maximum allowed length (32767 tokens). Use a shorter input or "
        "enable --allow-auto-truncate.",
        32767,
        40000,
        "sglang",
    ),
    (
        "tgi total",
        "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 65537. Given: 79993 `inputs` tokens "
        "and 1024 `max_new_tokens`",
        65537,
        79993,
        "tgi",
    ),
    (
        "tgi input",
        "Input validation error: `inputs` must have less than 2048 tokens. Given: 2222",
        2048,
        2222,
        "tgi",
    ),
    (
        "lm-studio keep",
        "Trying to keep the first 111490 tokens when context the overflows. However, the model is loaded with "
        "context length of only 32768 tokens, which is not enough. Try to load the model with a larger context "
        "length, or provide a shorter input.",
        32768,
        111490,
        "lm-studio",
    ),
    (
        "lm-studio n_keep",
        '{"error":"The number of tokens to keep from the initial prompt is greater than the context length '
        "(n_keep: 13055>= n_ctx: 4096). Try to load the model with a larger context length, or provide a shorter "
        'input."}',
        4096,
        13055,
        "lm-studio",
    ),
    (
        "lm-studio truncate",
        '{"error":"Cannot truncate prompt with n_keep (14169) >= n_ctx (4096)"}',
        4096,
        14169,
        "lm-studio",
    ),
    (
        "lm-studio mid-generation",
        "Reached context length of 4096 tokens with model (arch: qwen3vlmoe) that does not currently support "
        "mid-generation context overflow. Try reloading with a larger context length or shortening the "
        "prompt/chat.",
        4096,
        None,
        "lm-studio",
    ),
    (
        "openai messages",
        "litellm.BadRequestError: OpenAIException - Error code: 400 - {'error': {'message': \"This model's maximum "
        "context length is 16385 tokens. However, your messages resulted in 16468 tokens. Please reduce the length "
        "of the messages.\", 'type': 'invalid_request_error', 'param': 'messages', 'code': 'context_length_exceeded'}}",
        16385,
        16468,
        "openai",
    ),
    (
        "openai functions, vLLM's words",
        "This model's maximum context length is 8192 tokens. However, you requested 8213 tokens (6683 in the "
        "messages, 730 in the functions, and 800 in the completion). Please reduce the length of the messages, "
        "functions, or completion.",
        8192,
        7413,
        "vllm",
    ),
    (
        "anthropic prompt",
        '{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > '
        '200000 maximum"},"request_id":"req_011CVQe1dLrGNMJyE1ghG1av"}',
        200000,
        208310,
        "anthropic",
    ),
    (
        "anthropic input and max_tokens, wrapped as logged",
        'API Error: 400 {"type":"error","error":{"type":"invalid_request_error","message":"input length and '
        "`max_tokens` exceed context limit: \n     189136 + 20000 > 204648, decrease input length or `max_tokens` "
        'and try again"}}',
        204648,
        189136,
        "anthropic",
    ),
    (
        "bedrock relaying anthropic",
        "The model returned the following errors: prompt is too long: 213551 tokens > 200000 maximum",
        200000,
        213551,
        "anthropic",
    ),
    (
        "bedrock titan",
        "An error occurred (ValidationException) when calling the InvokeModel operation: 400 Bad Request: Too many "
        "input tokens. Max input tokens: 8192, request input token count: 9875 ",
        8192,
        9875,
        "bedrock",
    ),
    (
        "mistral",
        '{"object":"error","message":"Prompt contains 159202 tokens and 0 draft tokens, too large for model with '
        '131072 maximum context length","type":"invalid_request_invalid_args","param":null,"code":"3051",'
        '"raw_status_code":400}',
        131072,
        159202,
        "mistral",
    ),
    (
        "openrouter",
        "This endpoint's maximum context length is 204800 tokens. However, you requested about 205432 tokens "
        "(81684 of text input, 3748 of tool input, 120000 in the output). Please reduce the length of either one, "
        'or use the "middle-out" transform to compress your prompt automatically.',
        204800,
        85432,
        "openrouter",
    ),
    (
        "openrouter text only",
        "This endpoint's maximum context length is 32768 tokens. However, you requested about 42832 tokens (42832 "
        'of text input). Please reduce the length of either one, or use the "middle-out" transform to compress '
        "your prompt automatically.",
        32768,
        42832,
        "openrouter",
    ),
    (
        "gemini",
        "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).",
        1048576,
        1200293,
        "gemini",
    ),
]


@pytest.mark.parametrize(
    ("text", "limit", "counted", "backend"),
    [pytest.param(*example[1:], id=example[0]) for example in _EXAMPLES],
)
def test_each_wording_is_read(text: str, limit: int, counted: int | None, backend: str) -> None:
    """Each wording gives the limit, the backend's count of the input, and which wording it was."""
    found = served_limit(text)

    assert found is not None
    assert (found.limit, found.counted, found.backend) == (limit, counted, backend)
    assert is_context_error(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it",'
        '"type":"invalid_request_error"}}',
        "input is larger than the max context size. skipping",
        "the prompt is longer than the context length currently available to the model; shorten the prompt, adjust "
        "the context length in settings, or use a model with a longer context length",
        '{"error":"the input length exceeds the context length"}',
        "input exceeds maximum context length and cannot be truncated further",
        "The number of tokens to keep from the initial prompt is greater than the context length. Try to load the "
        "model with a larger context length, or provide a shorter input",
        '{"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your input exceeds '
        'the context window of this model. Please adjust your input and try again.","param":"input"}}',
        "An error occurred (ValidationException) when calling the InvokeModelWithResponseStream operation: Input is "
        "too long for requested model.",
        "The model returned the following errors: Input is too long for requested model.",
    ],
)
def test_a_context_error_without_numbers_is_one_but_states_no_limit(text: str) -> None:
    """Ollama's, Bedrock's plain and the rest: recognised, with no limit to read."""
    assert served_limit(text) is None
    assert is_context_error(text)


@pytest.mark.parametrize(
    "text",
    [
        "litellm.RateLimitError: OpenAIException - Error code: 429 - {'error': {'message': 'Rate limit reached for "
        "gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Used 28000, Requested 4000. Please try "
        "again in 4.0s.', 'type': 'tokens', 'param': None, 'code': 'rate_limit_exceeded'}}",
        "Error code: 401 - {'error': {'message': 'Incorrect API key provided: sk-abc. Invalid API key.', 'type': "
        "'invalid_request_error', 'param': None, 'code': 'invalid_api_key'}}",
        '{"error":{"code":500,"message":"internal error","type":"server_error"}}',
        "Error code: 400 - {'error': {'message': 'messages must be a list', 'type': 'invalid_request_error'}}",
        "rpc error: code = DeadlineExceeded desc = context deadline exceeded",
        "Invalid value for 'context': expected a string, got 4096 tokens.",
        '{"error":{"code":400,"message":"n_ctx must be at least 2048","type":"invalid_request_error"}}',
    ],
)
def test_other_errors_are_not_context_errors(text: str) -> None:
    """A rate limit, a bad key, a 500, a malformed request, a context in another sense: none of them."""
    assert served_limit(text) is None
    assert not is_context_error(text)


def test_counts_are_ints_with_or_without_thousands_separators() -> None:
    """No source seen writes separators, but a count that has them is still read as the int it is."""
    plain = served_limit("prompt is too long: 1050000 tokens > 1000000 maximum")
    grouped = served_limit("prompt is too long: 1,050,000 tokens > 1,000,000 maximum")

    expected = ServedLimit(limit=1_000_000, counted=1_050_000, backend="anthropic", includes_output=False)
    assert plain == grouped == expected
    assert grouped is not None
    assert type(grouped.limit) is int
    assert type(grouped.counted) is int


@pytest.mark.parametrize(
    ("text", "includes_output"),
    [
        ("request (2418 tokens) exceeds the available context size (2048 tokens), try increasing it", True),
        ("Input validation error: `inputs` must have less than 2048 tokens. Given: 2222", False),
    ],
)
def test_includes_output_says_whether_the_limit_is_the_whole_context(text: str, includes_output: bool) -> None:
    """llama.cpp's n_ctx holds the answer too; TGI's max_input_length is the prompt's alone."""
    found = served_limit(text)

    assert found is not None
    assert found.includes_output is includes_output
