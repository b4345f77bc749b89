"""Human renderings of a Plan: a terminal table and the model page in Markdown.

Both read the Plan's own fields, the values ``Plan.to_json()`` writes for ``--json``;
only the Markdown's structure table reads the JSON, whose flat node list the Plan keeps
as block patterns. So the terminal rendering does not load the JSON converter (cattrs
and the functions it generates), a sixth of what ``plan CONFIG`` cost to start.
"""

from __future__ import annotations

from estimator.fit import CardFit
from estimator.memory import MemoryEstimate
from estimator.plan import Plan

METHODS = ("full", "lora", "qlora", "serve")


def gib(n: float) -> str:
    """Bytes as GiB (2**30) to one decimal, as the terminal and Markdown tables show them."""
    return f"{n / 2**30:.1f} GiB"


def _count(n: float) -> str:
    for unit, size in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            return f"{n / size:.2f}{unit}"
    return str(int(n))


def headline(plan: Plan) -> str:
    """The one-line verdict atop both renderings: model, size and whether the workload fits."""
    w = plan.workload
    sel = plan.selected
    card = next(c for c in plan.cards if _same(c.card.name, w.card))
    fit = card.method(w.method)
    verdict = (
        f"fits ({fit.largest_batch} max batch)"
        if fit.fits
        else (
            "does not fit"
            if fit.largest_batch == 0
            else f"fits only up to batch {fit.largest_batch}"
        )
    )
    return (
        f"{dict(plan.model)['architecture']} ({_count(_total(plan))} parameters): "
        f"{w.method} at batch {w.batch} x {w.seq_len} tokens needs "
        f"{gib(sel.device_bytes)} per GPU ({gib(sel.peak_allocated_bytes)} allocated); "
        f"{card.card.name} {verdict}."
    )


def _total(plan: Plan) -> int:
    total: int = dict(plan.parameters)["total"]
    return total


def _same(a: str, b: str) -> bool:
    def key(s: str) -> str:
        return "".join(ch for ch in s.lower() if ch.isalnum())

    return key(a) == key(b) or key(b) in key(a)


def _checkpoint_line(plan: Plan) -> str:
    total = _total(plan)
    ck = plan.checkpoint
    if ck is None or ck.checkpoint_scalars is None:
        return f"Parameters: {total:,} (no weight manifest given)"
    line = f"Parameters: {total:,}; checkpoint stores {ck.checkpoint_scalars:,} ({ck.delta_percent:+.2f}%)"
    if ck.explanations:
        line += ": " + "; ".join(ck.explanations)
    return line


def _stack_line(plan: Plan) -> list[str]:
    """The stack the workload was modelled under, when one was given: which versions the
    figures assume is part of the answer, not a detail of the JSON."""
    stack = plan.workload.stack
    return [f"Stack: {stack} (versioned behaviour: estimator/README.md, Stacks)"] if stack else []


def _card_rows(plan: Plan) -> list[list[str]]:
    return [[c.card.name, gib(c.card.usable_bytes), *_fit_cells(c)] for c in plan.cards]


def _fit_cells(c: CardFit) -> list[str]:
    cells = []
    for m in METHODS:
        fit = c.method(m)
        if fit.largest_batch > 0:
            cells.append(f"{'yes' if fit.fits else 'no'} (max {fit.largest_batch})")
        elif fit.split_cards is not None:
            cells.append(f"no; {fit.split_cards} cards")
        else:
            cells.append("no")
    return cells


def _memory_rows(plan: Plan) -> list[list[str]]:
    memory = dict(plan.memory)
    return [_memory_row(m, memory[m]) for m in METHODS]


def _memory_row(method: str, e: MemoryEstimate) -> list[str]:
    b = dict(e.breakdown)
    return [
        method,
        gib(e.peak_allocated_bytes),
        gib(e.device_bytes),
        gib(b["weights"]),
        gib(b["gradients"] + b["optimizer_state"] + b["adapters"]),
        gib(b["activations"]),
        gib(b["kv_cache"]),
        e.peak_phase,
    ]


MEMORY_HEAD = [
    "method",
    "allocated",
    "device",
    "weights",
    "grad+optim",
    "activations",
    "kv",
    "peak at",
]
CARD_HEAD = ["card", "memory", "full", "lora", "qlora", "serve"]


def _table(head: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def _md_table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _cost_line(plan: Plan) -> str:
    """The workload's cost: a job that does not fit says so instead of a price; serving is
    priced per million generated tokens."""
    c = plan.cost
    if c.usd is None:
        return f"{c.method} on {c.card}: {c.price_source or 'no price stored'}"
    price = f"${c.usd:,.2f} ({c.price_source})"
    if c.method == "serve":
        return (
            f"serve on {c.card}: {price} per million generated tokens at "
            f"{c.decode_tokens_per_s:,.0f} tok/s (batch {plan.workload.batch}); "
            f"decode {c.decode_tokens_per_s_batch1:,.0f} tok/s at batch 1"
        )
    return (
        f"{c.method} on {c.card}: {c.seconds / 3600:,.1f} h ({c.bound}-bound), {price}; "
        f"decode {c.decode_tokens_per_s_batch1:,.0f} tok/s at batch 1"
    )


def render_terminal(plan: Plan) -> str:
    """The plan as plain-text tables for a terminal: memory, cards, cost and findings."""
    parts = [
        headline(plan),
        _checkpoint_line(plan),
        *_stack_line(plan),
        "",
        _table(MEMORY_HEAD, _memory_rows(plan)),
        "",
        _table(CARD_HEAD, _card_rows(plan)),
        "",
        "Cost: " + _cost_line(plan),
    ]
    if plan.findings:
        parts += ["", "Findings:"]
        parts += [f"  [{f.severity}] {f.id}: {f.message}" for f in plan.findings]
    return "\n".join(parts) + "\n"


def render_markdown(plan: Plan) -> str:
    """The plan as the model page's Markdown, rendered from the same JSON as ``--json``."""
    memory = dict(plan.memory)
    notes = [n for m in METHODS for n in memory[m].notes]
    structure = plan.to_json()["structure"]
    parts = [
        f"# {dict(plan.model)['architecture']}",
        "",
        headline(plan),
        "",
        _checkpoint_line(plan),
        *_stack_line(plan),
        "",
        "## Memory per card",
        "",
        _md_table(CARD_HEAD, _card_rows(plan)),
        "",
        _md_table(MEMORY_HEAD, _memory_rows(plan)),
        "",
        "## Method notes",
        "",
        *[f"- {n}" for n in notes],
        "",
        "## Cost",
        "",
        _cost_line(plan),
        "",
        "## Structure",
        "",
        f"{len(structure)} nodes; first and last:",
        "",
        _md_table(
            ["node", "kind", "shape"],
            [
                [n["name"], n["kind"], "x".join(map(str, n["shape"]))]
                for n in structure[:6] + structure[-3:]
            ],
        ),
        "",
        "## Findings",
        "",
        *(
            [f"- **{f.severity}** `{f.id}`: {f.message} Fix: {f.fix}" for f in plan.findings]
            or ["- none"]
        ),
        "",
        "## Assumptions",
        "",
        *[f"- {a}" for a in plan.assumptions],
    ]
    return "\n".join(parts) + "\n"
