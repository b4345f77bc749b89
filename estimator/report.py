"""Human renderings of a Plan: a terminal table and the model page in Markdown.

Both render from ``Plan.to_json()``, the same data ``--json`` prints, so the
three outputs can never disagree.
"""

from __future__ import annotations

from typing import Any

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


def headline(data: dict[str, Any]) -> str:
    """The one-line verdict atop both renderings: model, size and whether the workload fits."""
    model = data["model"]
    w = data["workload"]
    sel = data["memory"][w["method"]]
    card = next(c for c in data["cards"] if _same(c["card"], w["card"]))
    fit = card["methods"][w["method"]]
    verdict = (
        f"fits ({fit['largest_batch']} max batch)"
        if fit["fits"]
        else (
            "does not fit"
            if fit["largest_batch"] == 0
            else f"fits only up to batch {fit['largest_batch']}"
        )
    )
    return (
        f"{model['architecture']} ({_count(data['parameters']['total'])} parameters): "
        f"{w['method']} at batch {w['batch']} x {w['seq_len']} tokens needs "
        f"{gib(sel['device_bytes'])} per GPU ({gib(sel['peak_allocated_bytes'])} allocated); "
        f"{card['card']} {verdict}."
    )


def _same(a: str, b: str) -> bool:
    def key(s: str) -> str:
        return "".join(ch for ch in s.lower() if ch.isalnum())

    return key(a) == key(b) or key(b) in key(a)


def _checkpoint_line(data: dict[str, Any]) -> str:
    p = data["parameters"]
    ck = p["checkpoint"]
    if ck is None or ck["checkpoint_scalars"] is None:
        return f"Parameters: {p['total']:,} (no weight manifest given)"
    line = f"Parameters: {p['total']:,}; checkpoint stores {ck['checkpoint_scalars']:,} ({ck['delta_percent']:+.2f}%)"
    if ck["explanations"]:
        line += ": " + "; ".join(ck["explanations"])
    return line


def _stack_line(data: dict[str, Any]) -> list[str]:
    """The stack the workload was modelled under, when one was given: which versions the
    figures assume is part of the answer, not a detail of the JSON."""
    stack = data["workload"].get("stack")
    return [f"Stack: {stack} (versioned behaviour: estimator/README.md, Stacks)"] if stack else []


def _card_rows(data: dict[str, Any]) -> list[list[str]]:
    rows = []
    for c in data["cards"]:
        cells = [c["card"], gib(c["usable_bytes"])]
        for m in METHODS:
            fit = c["methods"][m]
            if fit["largest_batch"] > 0:
                cells.append(f"{'yes' if fit['fits'] else 'no'} (max {fit['largest_batch']})")
            elif fit["split"]:
                cells.append(f"no; {fit['split']['cards']} cards")
            else:
                cells.append("no")
        rows.append(cells)
    return rows


def _memory_rows(data: dict[str, Any]) -> list[list[str]]:
    rows = []
    for m in METHODS:
        e = data["memory"][m]
        b = e["breakdown"]
        rows.append(
            [
                m,
                gib(e["peak_allocated_bytes"]),
                gib(e["device_bytes"]),
                gib(b["weights"]),
                gib(b["gradients"] + b["optimizer_state"] + b["adapters"]),
                gib(b["activations"]),
                gib(b["kv_cache"]),
                e["peak_phase"],
            ]
        )
    return rows


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


def _cost_line(data: dict[str, Any]) -> str:
    """The workload's cost: a job that does not fit says so instead of a price; serving is
    priced per million generated tokens."""
    c = data["cost"]
    if c["usd"] is None:
        return f"{c['method']} on {c['card']}: {c['price_source'] or 'no price stored'}"
    price = f"${c['usd']:,.2f} ({c['price_source']})"
    if c["method"] == "serve":
        return (
            f"serve on {c['card']}: {price} per million generated tokens at "
            f"{c['decode_tokens_per_s']:,.0f} tok/s (batch {data['workload']['batch']}); "
            f"decode {c['decode_tokens_per_s_batch1']:,.0f} tok/s at batch 1"
        )
    return (
        f"{c['method']} on {c['card']}: {c['seconds'] / 3600:,.1f} h ({c['bound']}-bound), {price}; "
        f"decode {c['decode_tokens_per_s_batch1']:,.0f} tok/s at batch 1"
    )


def render_terminal(plan: Plan) -> str:
    """The plan as plain-text tables for a terminal: memory, cards, cost and findings."""
    data = plan.to_json()
    parts = [
        headline(data),
        _checkpoint_line(data),
        *_stack_line(data),
        "",
        _table(MEMORY_HEAD, _memory_rows(data)),
        "",
        _table(CARD_HEAD, _card_rows(data)),
        "",
        "Cost: " + _cost_line(data),
    ]
    if data["findings"]:
        parts += ["", "Findings:"]
        parts += [f"  [{f['severity']}] {f['id']}: {f['message']}" for f in data["findings"]]
    return "\n".join(parts) + "\n"


def render_markdown(plan: Plan) -> str:
    """The plan as the model page's Markdown, rendered from the same JSON as ``--json``."""
    data = plan.to_json()
    notes = [n for m in METHODS for n in data["memory"][m]["notes"]]
    structure = data["structure"]
    parts = [
        f"# {data['model']['architecture']}",
        "",
        headline(data),
        "",
        _checkpoint_line(data),
        *_stack_line(data),
        "",
        "## Memory per card",
        "",
        _md_table(CARD_HEAD, _card_rows(data)),
        "",
        _md_table(MEMORY_HEAD, _memory_rows(data)),
        "",
        "## Method notes",
        "",
        *[f"- {n}" for n in notes],
        "",
        "## Cost",
        "",
        _cost_line(data),
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
            [
                f"- **{f['severity']}** `{f['id']}`: {f['message']} Fix: {f['fix']}"
                for f in data["findings"]
            ]
            or ["- none"]
        ),
        "",
        "## Assumptions",
        "",
        *[f"- {a}" for a in data["assumptions"]],
    ]
    return "\n".join(parts) + "\n"
