"""The template probe matrix over the corpus, and every template change classified.

Run: ``.venv/bin/python tests/bench/bench_template_matrix.py [--messages]`` (about a minute).

Walks each corpus repo's main history as the Hub emulator serves it, finds the effective
chat templates at each revision (tokenizer_config.json's ``chat_template``, then
chat_template.json, then chat_template.jinja, as transformers loads them, with the
bos/eos/pad/unk texts they render with), and for every revision where they change:

1. the matrix row: which conversation shapes the template renders (R), ignores (i: renders
   but drops that part), refuses by design (X: raise_exception) or fails to render (F);
2. what ``tracker.diff.chat_template`` reports for the change (kind, severity, message).

Nothing is asserted; the tests hold the promises (tests/tracker/test_template_shapes.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))

from tracker.diff.chat_template import diff_chat_templates  # noqa: E402
from tracker.diff.template_probes import Support, render_probes, shapes, support_of  # noqa: E402
from tracker.hubsim import HubEmulator  # noqa: E402
from tracker.untrusted.artifacts import templates_from  # noqa: E402

CORPUS = REPO_ROOT.parent / "shared" / "hub-corpus"
LETTERS = {Support.RENDERS: "R", Support.IGNORES: "i", Support.REFUSES: "X", Support.FAILS: "F"}
TOKEN_NAMES = ("bos_token", "eos_token", "pad_token", "unk_token")

State = tuple[dict[str, str], dict[str, str], dict[str, str]]


def _json(files: dict[str, Any], path: str) -> Any:
    blob = files.get(path)
    try:
        return json.loads(blob.text().decode("utf-8-sig")) if blob is not None else None
    except (ValueError, AttributeError):
        return None


def effective(files: dict[str, Any]) -> State:
    """(template name -> source, name -> file, special token texts) at one revision."""
    templates: dict[str, str] = {}
    sources: dict[str, str] = {}
    for path in ("tokenizer_config.json", "chat_template.json"):
        document = _json(files, path)
        raw = document.get("chat_template") if isinstance(document, dict) else None
        try:
            found = templates_from(raw) if raw is not None else {}
        except Exception:  # not a string or list of {name, template}: the differ says so
            found = {}
        templates.update(found)
        sources.update(dict.fromkeys(found, path))
    jinja = files.get("chat_template.jinja")
    if jinja is not None and jinja.text() is not None:
        templates["default"] = jinja.text().decode("utf-8")
        sources["default"] = "chat_template.jinja"
    tokens: dict[str, str] = {}
    for path in ("special_tokens_map.json", "tokenizer_config.json"):
        document = _json(files, path)
        for name in TOKEN_NAMES if isinstance(document, dict) else ():
            token = document.get(name)
            token = token.get("content") if isinstance(token, dict) else token
            if isinstance(token, str):
                tokens[name] = token
    return templates, sources, tokens


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", action="store_true", help="print each change's message")
    args = parser.parse_args()
    emulator = HubEmulator(CORPUS)
    header = " ".join(f"{i + 1}" for i in range(len(shapes())))
    print("shapes: " + "; ".join(f"{i + 1} {s}" for i, s in enumerate(shapes())))
    print(f"{'repo':<44} {'revision':<8} {'template':<18} {header}")
    kinds: Counter[tuple[str, str]] = Counter()
    rows = 0
    for repo in emulator.repo_ids():
        previous: State = ({}, {}, {})
        for commit in reversed(emulator.history(repo)):
            state = effective(dict(emulator.tree(repo, commit.sha)))
            if state[0] == previous[0] and state[2] == previous[2]:
                continue
            for name, template in sorted(state[0].items()):
                if previous[0].get(name) == template and previous[2] == state[2]:
                    continue
                support = support_of(render_probes(template, state[2]))
                row = " ".join(LETTERS[support[s].support] for s in shapes())
                print(f"{repo:<44} {commit.sha[:8]} {name[:18]:<18} {row}")
                rows += 1
            if previous[0] or state[0]:
                changes = diff_chat_templates(
                    previous[0], state[0], previous[2], state[2], {**previous[1], **state[1]}
                )
                for change in changes:
                    kinds[(change.kind, change.severity.label)] += 1
                    if args.messages:
                        print(
                            f"    [{change.severity.label}] {change.kind}: {change.message[:220]}"
                        )
            previous = state
    print(f"\n{rows} template versions probed; changes by kind and severity:")
    for (kind, severity), count in sorted(kinds.items()):
        print(f"  {kind:<26} {severity:<9} {count}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
