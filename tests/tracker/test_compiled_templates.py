"""A worker compiles a template once and renders it as a fresh compile would, within a budget."""

from __future__ import annotations

from datetime import UTC, datetime

from tracker.diff.sandbox import CompiledTemplates, render_prompts

NOW = datetime(2025, 1, 1, tzinfo=UTC)
COUNTING = (
    "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}"
    "{{ m['content'] }}{% endfor %}:{{ ns.n }} {{ strftime_now('%Y') }}"
)


def test_a_template_is_compiled_once_and_renders_the_same_every_time() -> None:
    kept = CompiledTemplates(budget=1024)
    first = kept.get(COUNTING, NOW)
    assert kept.get(COUNTING, NOW) is first
    assert kept.get(COUNTING, datetime(2030, 1, 1, tzinfo=UTC)) is not first
    variables = [{"messages": [{"content": "a"}, {"content": "b"}]}]
    renders = [render_prompts(COUNTING, NOW, variables) for _ in range(3)]
    assert [r[0].text for r in renders] == ["ab:2 2025"] * 3


def test_the_least_recently_used_template_goes_once_the_budget_is_spent() -> None:
    kept = CompiledTemplates(budget=40)
    one, two, three = ("{{ 1 }}" + " " * 10, "{{ 2 }}" + " " * 10, "{{ 3 }}" + " " * 10)
    first = kept.get(one, NOW)
    kept.get(two, NOW)
    assert kept.get(one, NOW) is first  # one is now the most recent
    kept.get(three, NOW)  # 51 characters: two, the least recent, goes
    assert kept.get(one, NOW) is first
    assert kept.get(two, NOW) is not None
    huge = "{{ 4 }}" + " " * 100
    kept.get(huge, NOW)  # over the whole budget: compiled, not kept
    assert kept.get(huge, NOW) is not kept.get(huge, NOW)


def test_a_template_that_does_not_compile_fails_every_probe_each_time() -> None:
    broken = "{% for %}"
    for _ in range(2):
        outcomes = render_prompts(broken, NOW, [{}, {}])
        assert [o.text for o in outcomes] == [None, None]
        assert all(o.error and "TemplateSyntaxError" in o.error for o in outcomes)
