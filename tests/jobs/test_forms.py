"""The jobs' browser inputs read into typed parameters, stored under Pi's setting names."""

from __future__ import annotations

from django.http import QueryDict

from contextlab.jobs.forms import CompactForm, ContinueForm
from contextlab.jobs.parameters import JobParameters
from contextlab.pi.tokens import DEFAULT_KEEP_RECENT_TOKENS, DEFAULT_RESERVE_TOKENS


def test_a_compact_form_keeps_pis_defaults_for_missing_or_malformed_numbers() -> None:
    form = CompactForm(QueryDict("keepRecentTokens=123&reserveTokens=x²&instructions=+focus+"))
    assert form.is_valid()
    parameters = form.parameters()
    assert parameters == JobParameters(123, DEFAULT_RESERVE_TOKENS, "focus")
    assert parameters.as_json() == {
        "keepRecentTokens": 123,
        "reserveTokens": DEFAULT_RESERVE_TOKENS,
        "customInstructions": "focus",
    }
    assert CompactForm(QueryDict("")).settings()["keepRecentTokens"] == DEFAULT_KEEP_RECENT_TOKENS


def test_continuing_with_a_custom_prompt_needs_its_instructions() -> None:
    refused = ContinueForm(QueryDict("choice=custom&target=a1&from=b2"))
    assert not refused.is_valid()
    assert refused.non_field_errors() == ["Write the custom instructions, or pick another choice"]
    form = ContinueForm(QueryDict("choice=custom&instructions=why&replace=1&from=b2"))
    assert form.is_valid() and form.cleaned_data["from_leaf"] == "b2"
    assert form.parameters().as_json() == {"customInstructions": "why", "replaceInstructions": True}
    assert ContinueForm(QueryDict("choice=summary")).is_valid()
    plain = ContinueForm(QueryDict(""))
    assert plain.is_valid() and plain.cleaned_data["choice"] == "none"


def test_stored_parameters_read_back_as_they_were_written() -> None:
    for parameters in (
        JobParameters(),
        JobParameters(10, 20, "x"),
        JobParameters(custom_instructions="y", replace_instructions=False),
    ):
        assert JobParameters.from_json(parameters.as_json()) == parameters
    limited = JobParameters(context_window=64000, model_max_tokens=1000, thinking_level="high")
    assert limited.as_json() == {
        "contextWindow": 64000,
        "modelMaxTokens": 1000,
        "thinkingLevel": "high",
    }
    assert JobParameters.from_json(limited.as_json()) == limited


def test_rows_stored_before_the_parameters_were_typed_still_read() -> None:
    # What the command line, the API and retries stored as camelCase dicts, junk included.
    old = {
        "keepRecentTokens": 60,
        "reserveTokens": -1,
        "modelMaxTokens": 500,
        "customInstructions": 7,
        "replaceInstructions": 1,
        "somethingElse": True,
    }
    read = JobParameters.from_json(old)
    assert read == JobParameters(
        keep_recent_tokens=60, model_max_tokens=500, replace_instructions=True
    )
    options = read.summary_options()
    assert (options.keep_recent_tokens, options.reserve_tokens) == (60, DEFAULT_RESERVE_TOKENS)
    assert read.with_limits(128000, 16384).context_window == 128000
    assert read.with_limits(128000, 16384).model_max_tokens == 500
