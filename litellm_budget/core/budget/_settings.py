"""Every knob of the budget engine and the plugin, in one frozen value."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, get_args

from litellm_budget.core._checks import candidate_names, is_int, is_number, non_negative_int, positive_int
from litellm_budget.core.formats._placement import PLACEMENTS
from litellm_budget.typing import PolicyName

_POLICIES = frozenset(get_args(PolicyName))
_MAPPINGS = ("token_ratios", "cache_lifetimes", "cache_min_tokens_by")
#: Where a model family's ratio starts, by a word of its name: Claude's tokenizer counts 10-25% more than
#: cl100k, so at 1.0 a conversation's first request could overflow by that much; calibration goes on from there.
PRIOR_RATIOS = (("claude", 1.1),)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BudgetSettings:
    """
    How a request is fitted into its window; the same names are taken by ``ContextBudget(...)``, a
    deployment's ``model_info: {litellm_budget: {...}}`` and, if allowed, a request's ``metadata``.
    """

    #: ``auto``, ``elide``, ``plan`` or ``summarize`` (see ``core/policies/_registry.py``).
    policy: PolicyName = "auto"
    #: The window of models the model map does not know; ``None`` forwards them untouched.
    default_window: int | None = None
    #: Tokens held back for the answer when the client sends no ``max_tokens``; ``None``: per policy.
    response_reserve: int | None = None
    #: The default reserve of ``plan`` and ``auto``: this share of the window ...
    reserve_ratio: float = 0.25
    #: ... and at least this many tokens ...
    reserve_floor: int = 256
    #: ... and at most this many.
    reserve_cap: int = 8192
    #: A client's ``max_tokens`` reserves at most this share of the window.
    max_reserve_ratio: float = 0.5
    #: The share of the window never filled, because tokenizers differ.
    safety_margin: float = 0.02
    #: The same, for models counted with another family's tokenizer (Claude, Gemini, Llama): their count
    #: differs from ours by a few percent per request beyond the learned ratio (tool schemas count unlike prose).
    approximate_margin: float = 0.05
    #: Once trimming, aim at this share of the budget; the quantum is the rest.
    watermark: float = 0.7
    #: The last messages that are elided only under pressure (``auto``) or never (``elide``).
    protected_tail: int = 8
    #: Texts of at most this many tokens are never elided; ``None``: 9% of the budget (262 at a 4k window),
    #: at most 500, or 200 for the ``elide`` policy, which drops nothing and so elides smaller outputs.
    elide_min_tokens: int | None = None
    #: The same for an assistant's text beside its tool calls: the calls say what was done, so it goes first.
    elide_step_text_min_tokens: int = 150
    #: The most characters a digest quotes of one elided output (its first and last or error line), and of
    #: one dropped call (1.5 times this of its arguments, half of what came of it); 0: say only how much.
    digest_chars: int = 160
    #: The most characters an elided output's placeholder lists of the functions and classes it showed
    #: (with line numbers); ``None``: four times ``digest_chars`` from a 32k window up, else none; 0: none.
    outline_chars: int | None = None
    #: The most names an elided assistant text's placeholder lists; ``None``: 20 from 32k up (``elide.py``).
    text_names: int | None = None
    #: The most of the prompt's room a marker's lines of dropped steps take (older ones counted);
    #: ``None``: the policy's own (``marker_digest.POLICY_SHARES``).
    digest_share: float | None = None
    #: The same for its line of names: those the dropped steps held that nothing else shows.
    names_share: float | None = None
    #: ... and the most names of one dropped step's call, and again of its output, listed there.
    names_per_step: int = 12
    #: Whether a later read of the same file (``cat``, ``sed -n``, ``nl``, ``head``, a view, any
    #: range) makes an earlier read's output stale for elision, as a rerun of the same call does.
    stale_reads: bool = False
    #: Where a marker or summary goes: ``user_note`` (merged into the user message beside it, as strict
    #: chat templates of local models require), ``system_message`` (a system message where it stands:
    #: OpenAI accepts it anywhere) or ``leading_system`` (into the leading system text).
    marker_placement: str = "user_note"
    #: The fixed cost counted per image part.
    image_tokens: int = 765
    #: Provider tokens per counted token by model name, until calibration learns it (always, if ``calibrate`` is off).
    token_ratios: Mapping[str, float] = dataclasses.field(default_factory=dict)
    #: A request over its deployment's window goes to a router fallback with a bigger one
    #: (``context_window_fallbacks``, else ``fallbacks``) before anything is trimmed.
    prefer_fallbacks: bool = True
    #: Fail a request on an internal error instead of forwarding it untouched.
    fail_closed: bool = False
    #: Honour a request's own ``metadata.litellm_budget`` (a few knobs; ``window`` only lowers).
    allow_request_overrides: bool = False
    #: Remember each conversation's last edits, so they stay put while they fit and only ever grow
    #: (in LiteLLM's cache: memory, and Redis where the proxy has one).
    conversation_state: bool = True
    #: Seconds a provider keeps a prompt cached; a conversation quiet for longer is fitted afresh.
    cache_lifetime: float = 300.0
    #: ``cache_lifetime`` per provider (``anthropic``) or model name, where it differs.
    cache_lifetimes: Mapping[str, float] = dataclasses.field(default_factory=dict)
    #: The fewest tokens a provider caches (OpenAI's and Anthropic's 1024): a shorter shared prefix not
    #: read is no miss (``cache_miss: below_minimum``).
    cache_min_tokens: int = 1024
    #: ``cache_min_tokens`` per provider or model name, where it differs (Claude Haiku: 2048).
    cache_min_tokens_by: Mapping[str, int] = dataclasses.field(default_factory=dict)
    #: Anthropic: add ``cache_control`` breakpoints (within the API's four, the client's kept) after the
    #: last edit, after the marker and at the end.
    cache_breakpoints: bool = False
    #: OpenAI: send the conversation key as ``prompt_cache_key`` where the client sent none.
    prompt_cache_key: bool = False
    #: Learn each model's ratio of reported ``usage.prompt_tokens`` to our count.
    calibrate: bool = True
    #: Seconds a window learned from a backend (``served_windows.py``) holds; then the configured one.
    learned_window_ttl: float = 3600.0
    #: Send a request whose size bound (UTF-8 bytes, framing, tools, images) is under the budget untokenized,
    #: untouched or with its kept edits, and count it right after; ``False``: count every request first.
    size_gate: bool = True
    #: The learned ratio is clamped to ``(low, high)``.
    calibration_bounds: tuple[float, float] = (0.8, 2.0)
    #: How far one observation moves the learned ratio (1: all the way).
    calibration_weight: float = 0.3
    #: The LiteLLM model group that summarizes dropped blocks; ``None``: markers only.
    summary_model: str | None = None
    #: The most seconds a request waits for a new summary before it goes with the marker.
    summary_timeout: float = 3.0
    #: The most tokens a summary may take in the window (and the summary call may answer).
    summary_max_tokens: int = 512
    #: Store what a fit takes out and serve it back through a recall tool (``docs/recall.md``).
    recall_tool: bool = False
    #: The most recalls one request serves; a call beyond them is answered that the limit was reached.
    recall_limit: int = 3

    def __post_init__(self) -> None:
        _check = self._check
        _check(self.policy in _POLICIES, "policy", f"one of {sorted(_POLICIES)}")
        window, reserve = self.default_window, self.response_reserve
        _check(window is None or positive_int(window) is not None, "default_window", "a positive int or None")
        _check(reserve is None or non_negative_int(reserve), "response_reserve", "an int >= 0 or None")
        _check(0 < self.reserve_ratio < 1, "reserve_ratio", "between 0 and 1")
        _check(0 <= self.reserve_floor <= self.reserve_cap, "reserve_floor", "between 0 and reserve_cap")
        _check(0 < self.max_reserve_ratio < 1, "max_reserve_ratio", "between 0 and 1")
        _check(0 <= self.safety_margin < 0.5, "safety_margin", "between 0 and 0.5")
        _check(0 <= self.approximate_margin < 0.5, "approximate_margin", "between 0 and 0.5")
        _check(0 < self.watermark < 1, "watermark", "between 0 and 1 (exclusive)")
        for count in ("protected_tail", "elide_step_text_min_tokens", "image_tokens", "digest_chars"):
            _check(non_negative_int(getattr(self, count)), count, "an int >= 0")
        for count in ("elide_min_tokens", "outline_chars", "text_names"):
            _check(getattr(self, count) is None or non_negative_int(getattr(self, count)), count, "an int >= 0 or None")
        for share in ("digest_share", "names_share"):
            _check(getattr(self, share) is None or 0 <= getattr(self, share) < 0.5, share, "between 0 and 0.5 or None")
        _check(non_negative_int(self.names_per_step), "names_per_step", "an int >= 0")
        _check(self.marker_placement in PLACEMENTS, "marker_placement", f"one of {list(PLACEMENTS)}")
        _check(all(is_number(r) and r > 0 for r in self.token_ratios.values()), "token_ratios", "positive ratios")
        _check(self.cache_lifetime > 0, "cache_lifetime", "a number of seconds > 0")
        _check(self.learned_window_ttl > 0, "learned_window_ttl", "a number of seconds > 0")
        _check(all(is_number(t) and t > 0 for t in self.cache_lifetimes.values()), "cache_lifetimes", "seconds > 0")
        _check(non_negative_int(self.cache_min_tokens), "cache_min_tokens", "an int >= 0")
        _check(all(map(non_negative_int, self.cache_min_tokens_by.values())), "cache_min_tokens_by", "ints >= 0")
        low, high = self.calibration_bounds
        _check(0 < low <= 1 <= high, "calibration_bounds", "(low <= 1 <= high), both positive")
        _check(0 < self.calibration_weight <= 1, "calibration_weight", "in (0, 1]")
        model = self.summary_model
        _check(model is None or (isinstance(model, str) and bool(model)), "summary_model", "a model name or None")
        _check(is_number(self.summary_timeout) and self.summary_timeout > 0, "summary_timeout", "a number > 0")
        _check(positive_int(self.summary_max_tokens) is not None, "summary_max_tokens", "an int > 0")
        _check(positive_int(self.recall_limit) is not None, "recall_limit", "an int > 0")
        for name in _MAPPINGS:
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    def updated(self, overrides: Mapping[str, Any]) -> BudgetSettings:
        """A copy with ``overrides`` (as read from YAML or JSON) applied; a bad key or value raises ``SettingError``."""
        if not overrides:
            return self
        unknown = sorted(map(str, set(overrides) - SETTING_NAMES))
        if unknown:
            msg = f"unknown litellm_budget setting(s) {unknown}; known: {sorted(SETTING_NAMES)}"
            raise SettingError(unknown[0], "is not a setting", msg)
        values: dict[str, Any] = {key: _coerce(key, getattr(self, key), value) for key, value in overrides.items()}
        return dataclasses.replace(self, **values)

    def _check(self, ok: bool, field: str, expected: str) -> None:
        if not ok:
            msg = f"BudgetSettings.{field} must be {expected}, got {shown(getattr(self, field))}"
            raise SettingError(field, f"must be {expected}", msg)

    def lifetime_for(self, model: str) -> float:
        """The prompt-cache lifetime of ``model``: by name (full first), then its provider prefix."""
        return float(_by_model(self.cache_lifetimes, model, self.cache_lifetime))

    def min_tokens_for(self, model: str) -> int:
        """The fewest tokens ``model``'s provider caches, looked up as ``lifetime_for`` does."""
        return int(_by_model(self.cache_min_tokens_by, model, self.cache_min_tokens))

    def ratio_for(self, model: str) -> float:
        """The configured token ratio of ``model`` by its ``candidate_names`` (full name first), else its prior."""
        for name in candidate_names(model):
            if name in self.token_ratios:
                return self.token_ratios[name]
        lowered = model.lower()
        return next((ratio for word, ratio in PRIOR_RATIOS if word in lowered), 1.0)


#: The longest value a message shows; a request's metadata may hold anything.
SHOWN_CHARS = 80


def shown(value: object) -> str:
    """``repr(value)``, at most ``SHOWN_CHARS`` long."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


class SettingError(ValueError):
    """A setting the engine cannot take: its ``key`` and, in words, what was wrong (``reason``)."""

    def __init__(self, key: str, reason: str, message: str) -> None:
        super().__init__(message)
        self.key = key
        self.reason = reason


SETTING_NAMES = frozenset(field.name for field in dataclasses.fields(BudgetSettings))


def _by_model(values: Mapping[str, float], model: str, default: float) -> float:
    for name in (*candidate_names(model), model.partition("/")[0]):
        if name in values:
            return values[name]
    return default


#: The settings whose default is ``None``, by the type they take otherwise, which only their annotation shows.
_NULLABLE_INTS = frozenset(f.name for f in dataclasses.fields(BudgetSettings) if f.type == "int | None")
_NULLABLE_STRS = frozenset(f.name for f in dataclasses.fields(BudgetSettings) if f.type == "str | None")
_NULLABLE_FLOATS = frozenset(f.name for f in dataclasses.fields(BudgetSettings) if f.type == "float | None")


def _coerce(key: str, current: object, value: object) -> object:
    """Accept the value if it has the field's type; ints stand in for floats."""
    if key == "calibration_bounds" and isinstance(value, list | tuple) and len(value) == 2:
        if not all(is_number(bound) for bound in value):
            raise _type_error(key, current, value)
        return (float(value[0]), float(value[1]))
    if key in _NULLABLE_INTS and (value is None or is_int(value)):
        return value
    if key in _NULLABLE_STRS and (value is None or isinstance(value, str)):
        return value
    if key in _NULLABLE_FLOATS and (value is None or is_number(value)):
        return value if value is None else float(value)
    if key in _MAPPINGS and isinstance(value, Mapping):
        return dict(value)
    if isinstance(current, bool):
        ok = isinstance(value, bool)
    elif isinstance(current, float):
        ok = is_number(value)
    elif isinstance(current, int):
        ok = is_int(value)
    else:
        ok = isinstance(value, type(current))
    if not ok:
        raise _type_error(key, current, value)
    return float(value) if isinstance(current, float) else value  # type: ignore[arg-type]


def _type_error(key: str, current: object, value: object) -> SettingError:
    kind = _KINDS_BY_KEY.get(key) or f"{_KINDS.get(type(current), type(current).__name__)} like {current!r}"
    if isinstance(current, bool):
        kind = "true or false"
    reason = f"must be {kind}, not {type(value).__name__}"
    return SettingError(key, reason, f"litellm_budget setting {key!r} {reason}")


#: How a type of setting is said in a message; then the same, for the settings whose default does not show their type.
_KINDS: Mapping[type, str] = MappingProxyType({int: "an integer", float: "a number", str: "a string"})
_KINDS_BY_KEY = MappingProxyType(
    {
        "default_window": "a positive integer or null",
        "response_reserve": "an integer >= 0 or null",
        "elide_min_tokens": "an integer >= 0 or null (null: scaled with the window)",
        "outline_chars": "an integer >= 0 or null (null: 4 x digest_chars from a 32k window up)",
        "text_names": "an integer >= 0 or null (null: 20 from a 32k window up)",
        **dict.fromkeys(("digest_share", "names_share"), "a number or null (null: the policy's own)"),
        "summary_model": "a model group name or null",
        "token_ratios": "a mapping of model names to ratios",
        "cache_lifetimes": "a mapping of providers or models to seconds",
        "calibration_bounds": "a pair of numbers like [0.8, 2.0]",
    }
)
