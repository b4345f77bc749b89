"""Every change line of ``history`` is readable on its own, checked over the corpus.

Replayed through the Hub emulator and printed as ``neurarch-trace history`` prints it,
no line shows an ``old -> new`` whose two printed sides are equal, a token count its id
range cannot hold, a size delta computed from an implausible declared size, or more
than ``MAX_LINE_CHARS`` characters (tests/fixtures/change_lines.py reads the text
alone). The default run replays the repos the wording was fixed on; ``-m slow``
replays the whole corpus.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from storage import open_database
from tests.fixtures.change_lines import absurd_deltas, contradicting_ranges, equal_sides
from tests.storage.builders import recorded_at
from tracker.commands.render import history_text
from tracker.diff.shapes import MAX_LINE_CHARS
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hubsim import HubEmulator, estimator_tensor_shapes
from tracker.reads.documents import history_document
from tracker.revision.backfill import backfill
from tracker.settings import HubSettings

EXAMPLES = (
    "IDEA-Research/grounding-dino-tiny",
    "bigscience/bloom",
    "ibm-granite/granite-3.1-1b-a400m-instruct",
    "ibm-granite/granite-docling-258M",
)
_LINE = re.compile(r"^  \[(\w+)\] (.*)$")


def histories(corpus_dir: Path, tmp_path: Path, repos: tuple[str, ...] | None) -> dict[str, str]:
    """``history`` text per repo after backfilling ``repos`` (every corpus repo if None)."""
    emulator = HubEmulator(corpus_dir, tensor_shapes=estimator_tensor_shapes)
    url = emulator.start()
    database = open_database(f"sqlite:///{tmp_path}/db.sqlite")
    try:
        database.migrate()
        chosen = repos or tuple(emulator.repo_ids())
        for repo in chosen:
            backfill(
                database, Hub(connect(HubSettings(url)), max_retries=0), repo, clock=recorded_at
            )
        return {repo: history_text(history_document(database, repo)) for repo in chosen}
    finally:
        database.close()
        emulator.stop()


def messages(texts: dict[str, str]) -> Iterator[tuple[str, str]]:
    for repo, text in texts.items():
        for line in text.splitlines():
            match = _LINE.match(line)
            if match:
                yield repo, match.group(2)


def unreadable(texts: dict[str, str]) -> list[str]:
    found = []
    for repo, message in messages(texts):
        problems = equal_sides(message) + contradicting_ranges(message) + absurd_deltas(message)
        if len(message) > MAX_LINE_CHARS:
            problems.append(f"{len(message)} characters")
        found += [f"{repo}: {problem} in {message[:160]}" for problem in problems]
    return found


def test_the_lines_the_wording_was_fixed_on_read_as_they_should(
    corpus_dir: Path, tmp_path: Path
) -> None:
    texts = histories(corpus_dir, tmp_path, EXAMPLES)
    assert unreadable(texts) == []
    dino = texts["IDEA-Research/grounding-dino-tiny"]
    assert (
        "[info] config.json: bbox_cost, bbox_loss_coefficient, class_cost and 2 more: the same "
        "values, now floats (e.g. 5 -> 5.0)" in dino
    )
    assert " 5 -> 5.0: " not in dino
    docling = texts["ibm-granite/granite-docling-258M"]
    assert "tokens added, ids 100352..100352" not in docling
    assert (
        "[moderate] tokenizer_config.json: 96 tokens added, ids 100256..100351; first: special "
        "token <|pad|> added (id 100256)" in docling
    )
    assert (
        "[moderate] added_tokens.json: added token <end_of_utterance> added (id 100352)" in docling
    )
    bloom = texts["bigscience/bloom"]
    assert "sizes not compared: the previous revision lists 72 at an implausible size" in bloom
    assert "metadata.total_size 2.57e+71 -> 352,494,542,848: the previous index declares" in bloom
    granite = texts["ibm-granite/granite-3.1-1b-a400m-instruct"]
    assert (
        'first system+user (add_generation_prompt=off): after …"<|end_of_text|>\\n": '
        '"<|start_of_role|>system<' in granite
    )
    assert 'assistant.<|end_of_text|>\\n" removed, then "<|start_of_role|>user<|e' in granite
    assert "total scalars in the weights 1,334,628,352 -> 0" not in granite
    assert (
        "no safetensors weights at this revision: the previous revision's 218 tensors "
        "(1,334,628,352 scalars)" in granite
    )


@pytest.mark.slow
def test_no_line_of_the_whole_corpus_is_unreadable(corpus_dir: Path, tmp_path: Path) -> None:
    texts = histories(corpus_dir, tmp_path, None)
    # about 1,400 lines: the whole corpus's history, one estimate line per method per revision
    assert sum(1 for _ in messages(texts)) > 1000
    assert unreadable(texts) == []
