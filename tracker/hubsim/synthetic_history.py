"""Synthetic repo histories drawn from the shapes of the recorded corpus, deterministic by seed.

A synthetic Hub of N repos must not hold N histories in memory, so everything about repo
``i`` is a pure function of ``(seed, i)``, and its revision ``k`` of ``(seed, i, k)``:

- ``schedule(i)``: the repo id, the commit dates and kinds, the shas. Cheap (no file
  contents), so the listing of all N heads can be computed at start-up.
- ``files(i)``: the text files of every revision, oldest first, made by replaying the
  schedule's edits on the repo's template. Only asked for repos a client reads.

Templates are the head text files of the corpus repos (config.json, tokenizer_config.json,
special_tokens_map.json, generation_config.json, chat templates, weight index files, ...):
a synthetic repo starts as a copy of one, then each revision is one of the edits the real
histories show (``KINDS``): config edits (context length, rope_scaling, eos ids,
torch_dtype), generation defaults, tokenizer and special-token edits, chat-template edits,
weight re-uploads (a new index file: the emulator derives new shards) and README-only
commits. Revision counts have a heavy tail (Pareto): most repos a few, some hundreds.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

KINDS: Mapping[str, float] = {
    "readme": 0.22,
    "config": 0.26,
    "generation": 0.10,
    "tokenizer": 0.14,
    "template": 0.12,
    "weights": 0.16,
}
"""Edit kind -> share of revisions (a kind a template cannot take falls back to readme)."""

TITLES = {
    "upload": "Upload folder using huggingface_hub",
    "readme": "Update README.md",
    "config": "Update config.json",
    "generation": "Update generation_config.json",
    "tokenizer": "Update tokenizer_config.json",
    "template": "Update chat template",
    "weights": "Upload folder using huggingface_hub",
}
FIRST_DAY = datetime(2022, 1, 1, tzinfo=UTC)
SPAN_DAYS = 3 * 365
"""Repos are created within three years of FIRST_DAY."""
LAST_DAY = datetime(2025, 12, 1, tzinfo=UTC)
"""Every synthetic commit is older than this, so pushes made now list first."""
MEAN_GAP_HOURS = 24.0 * 9
MAX_REVISIONS = 400
PARETO_ALPHA = 1.5
PARETO_SCALE = 3.6
"""Uploads per repo: ceil(SCALE * Pareto(ALPHA)), capped; mean about 10, the median 5."""
TEMPLATE_FILE_LIMIT = 160 * 1024
"""Template files larger than this are left out (a 1 MB tokenizer_config.json per edit
would make a million-revision run measure the JSON parser)."""
CHATML = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
TEXT_SUFFIXES = (".json", ".jinja", ".md", ".txt", ".py")


@dataclass(frozen=True)
class Template:
    """One corpus repo's head text files: what a synthetic repo starts from."""

    source: str
    files: Mapping[str, bytes]


@dataclass(frozen=True)
class Step:
    """One commit of a synthetic repo's main branch (index 0 is the Hub's initial commit)."""

    sha: str
    date: datetime
    kind: str
    title: str


@dataclass(frozen=True)
class Schedule:
    """What a synthetic repo looks like without any file contents."""

    index: int
    repo_id: str
    template: int
    steps: Sequence[Step]

    @property
    def head(self) -> Step:
        """The newest step: main's head."""
        return self.steps[-1]


def templates_from(trees: Mapping[str, Mapping[str, bytes]]) -> list[Template]:
    """Corpus head trees (repo id -> path -> bytes) as templates: those with a config.json."""
    found = []
    for repo_id, tree in sorted(trees.items()):
        files = {
            path: content
            for path, content in tree.items()
            if path.endswith(TEXT_SUFFIXES) and len(content) <= TEMPLATE_FILE_LIMIT
        }
        if _json(files.get("config.json")) is not None:
            found.append(Template(repo_id, files))
    return found


class HistoryGenerator:
    """Schedules and file histories of repos ``0..size-1`` of the synthetic Hub ``seed``."""

    def __init__(self, size: int, seed: int, templates: Sequence[Template]) -> None:
        if not templates:
            raise ValueError("a synthetic Hub needs at least one template with a config.json")
        self.size = size
        self.seed = seed
        self.templates = list(templates)

    def _random(self, *parts: object) -> random.Random:
        return random.Random(":".join(str(p) for p in (self.seed, *parts)))

    def repo_id(self, index: int) -> str:
        """The id of repo ``index``: ``synth-NNN/<template name>-NNNNNN``, the same for a seed."""
        template = self.templates[self._template_of(index)]
        name = template.source.split("/")[1][:60]
        return f"synth-{index % 1000:03d}/{name}-{index:06d}"

    def _template_of(self, index: int) -> int:
        return self._random("template", index).randrange(len(self.templates))

    def uploads(self, index: int) -> int:
        """Commits after the initial one: a Pareto draw, so a few repos have hundreds."""
        draw = self._random("count", index).paretovariate(PARETO_ALPHA)
        return max(1, min(MAX_REVISIONS - 1, int(PARETO_SCALE * draw + 0.999)))

    def schedule(self, index: int) -> Schedule:
        """Repo ``index``'s commits (shas, dates, kinds), without file contents.

        Deterministic in the seed and index; a long history is squeezed to end by ``LAST_DAY``.
        """
        repo_id = self.repo_id(index)
        rng = self._random("dates", index)
        created = FIRST_DAY + timedelta(seconds=rng.randrange(SPAN_DAYS * 86400))
        uploads = self.uploads(index)
        gaps = [60 + rng.expovariate(1 / (MEAN_GAP_HOURS * 3600)) for _ in range(uploads)]
        room = (LAST_DAY - created).total_seconds()
        squeeze = min(1.0, room / sum(gaps))  # a long history ends by LAST_DAY, not later
        kinds = list(KINDS)
        shares = list(KINDS.values())
        steps = [Step(self._sha(index, 0), created, "initial", "initial commit")]
        elapsed = 0.0
        for k, gap in enumerate(gaps, start=1):
            elapsed += max(1.0, gap * squeeze)
            kind = "upload" if k == 1 else rng.choices(kinds, shares)[0]
            date = created + timedelta(seconds=int(elapsed))
            steps.append(Step(self._sha(index, k), date, kind, TITLES[kind]))
        return Schedule(index, repo_id, self._template_of(index), tuple(steps))

    def _sha(self, index: int, step: int) -> str:
        return hashlib.sha1(f"hubsim-synthetic\n{self.seed}\n{index}\n{step}".encode()).hexdigest()

    def files(self, schedule: Schedule) -> list[dict[str, bytes]]:
        """The files each commit writes (index 0, the initial commit, writes none here)."""
        template = self.templates[schedule.template]
        state: dict[str, bytes] = {}
        written: list[dict[str, bytes]] = [{}]
        for k, step in enumerate(schedule.steps[1:], start=1):
            rng = self._random("edit", schedule.index, k)
            if step.kind == "upload":
                change = dict(template.files)
                change["README.md"] = _readme(schedule.repo_id, template.source, rng)
            else:
                change = _edit(step.kind, state, rng)
            state.update(change)
            written.append(change)
        return written


def _json(content: bytes | None) -> dict[str, Any] | None:
    if content is None:
        return None
    try:
        document = json.loads(content)
    except (ValueError, RecursionError):
        return None
    return document if isinstance(document, dict) else None


def _dump(document: Mapping[str, Any]) -> bytes:
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()


def _readme(repo_id: str, source: str, rng: random.Random) -> bytes:
    license_name = rng.choice(["apache-2.0", "mit", "llama3", "gemma", "other"])
    return (
        f"---\nlicense: {license_name}\nlibrary_name: transformers\nbase_model: {source}\n---\n"
        f"# {repo_id.split('/')[1]}\n\nRevision note {rng.randrange(10**6)}.\n"
    ).encode()


def _edit(kind: str, state: Mapping[str, bytes], rng: random.Random) -> dict[str, bytes]:
    """The files one edit of ``kind`` writes over ``state``; a README edit where it cannot."""
    edit = {
        "config": _edit_config,
        "generation": _edit_generation,
        "tokenizer": _edit_tokenizer,
        "template": _edit_template,
        "weights": _reupload_weights,
    }.get(kind)
    change = edit(state, rng) if edit else None
    if change:
        return change
    readme = state.get("README.md", b"")
    return {"README.md": readme + f"\nUpdated ({rng.randrange(10**6)}).\n".encode()}


def _edit_config(state: Mapping[str, bytes], rng: random.Random) -> dict[str, bytes] | None:
    config = _json(state.get("config.json"))
    if config is None:
        return None
    field = rng.choice(["context", "rope_scaling", "eos", "dtype"])
    if field == "context":
        current = config.get("max_position_embeddings")
        base = current if isinstance(current, int) and current > 0 else 2048
        config["max_position_embeddings"] = (
            base * rng.choice([2, 4]) if rng.random() < 0.7 else 4096
        )
    elif field == "rope_scaling":
        if config.get("rope_scaling") and rng.random() < 0.4:
            config["rope_scaling"] = None
        else:
            config["rope_scaling"] = rng.choice(
                [
                    {"type": "linear", "factor": float(rng.choice([2, 4]))},
                    {"type": "dynamic", "factor": 2.0},
                    {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                     "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
                ]
            )  # fmt: skip
    elif field == "eos":
        eos = config.get("eos_token_id")
        first = eos[0] if isinstance(eos, list) and eos else eos if isinstance(eos, int) else 2
        config["eos_token_id"] = (
            [first, first + 1 + rng.randrange(8)] if rng.random() < 0.6 else first
        )
    else:
        dtypes = [d for d in ("bfloat16", "float16", "float32") if d != config.get("torch_dtype")]
        config["torch_dtype"] = rng.choice(dtypes)
    return {"config.json": _dump(config)}


def _edit_generation(state: Mapping[str, bytes], rng: random.Random) -> dict[str, bytes] | None:
    generation = _json(state.get("generation_config.json"))
    if generation is None:
        return None
    field = rng.choice(["temperature", "top_p", "max_new_tokens", "do_sample"])
    value: Any = {
        "temperature": round(rng.uniform(0.1, 1.2), 2),
        "top_p": round(rng.uniform(0.5, 1.0), 2),
        "max_new_tokens": rng.choice([256, 512, 1024, 2048]),
        "do_sample": rng.random() < 0.5,
    }[field]
    generation[field] = value
    return {"generation_config.json": _dump(generation)}


def _edit_tokenizer(state: Mapping[str, bytes], rng: random.Random) -> dict[str, bytes] | None:
    tokenizer = _json(state.get("tokenizer_config.json"))
    if tokenizer is None:
        return None
    change: dict[str, bytes] = {}
    field = rng.choice(["max_length", "bos", "eos", "added_token"])
    if field == "max_length":
        tokenizer["model_max_length"] = rng.choice([2048, 4096, 8192, 32768, 131072])
    elif field == "bos":
        tokenizer["add_bos_token"] = not tokenizer.get("add_bos_token", True)
    elif field == "eos":
        token = rng.choice(["</s>", "<|endoftext|>", "<|im_end|>", "<|eot_id|>"])
        tokenizer["eos_token"] = token
        special = _json(state.get("special_tokens_map.json"))
        if special is not None:
            special["eos_token"] = token
            change["special_tokens_map.json"] = _dump(special)
    else:
        decoder = tokenizer.get("added_tokens_decoder")
        decoder = decoder if isinstance(decoder, dict) else {}
        number = max((int(k) for k in decoder if str(k).isdigit()), default=32000) + 1
        decoder[str(number)] = {
            "content": f"<|reserved_{number}|>", "lstrip": False, "normalized": False,
            "rstrip": False, "single_word": False, "special": True,
        }  # fmt: skip
        tokenizer["added_tokens_decoder"] = decoder
    change["tokenizer_config.json"] = _dump(tokenizer)
    return change


def _edit_template(state: Mapping[str, bytes], rng: random.Random) -> dict[str, bytes] | None:
    """Edit the chat template where the repo keeps it (a .jinja file or tokenizer_config.json)."""
    system = f"You are a helpful assistant (v{rng.randrange(1000)})."
    prefix = "{% if messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\n" + system
    prefix += "<|im_end|>\\n' }}{% endif %}"
    if "chat_template.jinja" in state:
        body = state["chat_template.jinja"].decode("utf-8", "replace")
        return {"chat_template.jinja": (prefix + body.split("{# edit #}", 1)[-1]).encode()}
    tokenizer = _json(state.get("tokenizer_config.json"))
    if tokenizer is None:
        return None
    current = tokenizer.get("chat_template")
    body = current if isinstance(current, str) else CHATML
    tokenizer["chat_template"] = prefix + "{# edit #}" + body.split("{# edit #}", 1)[-1]
    return {"tokenizer_config.json": _dump(tokenizer)}


def _reupload_weights(state: Mapping[str, bytes], rng: random.Random) -> dict[str, bytes] | None:
    """A new index file is a re-upload: the emulator derives new shards for it."""
    for path in sorted(state):
        if not path.endswith(".index.json"):
            continue
        index = _json(state[path])
        if index is None or not isinstance(index.get("weight_map"), dict):
            continue
        found = index.get("metadata")
        metadata: dict[str, Any] = found if isinstance(found, dict) else {}
        total = metadata.get("total_size")
        if isinstance(total, int):
            metadata["total_size"] = total + 8 * rng.randrange(1, 1024)
        metadata["upload"] = f"{rng.randrange(16**8):08x}"
        index["metadata"] = metadata
        return {path: _dump(index)}
    return None


__all__ = ["KINDS", "HistoryGenerator", "Schedule", "Step", "Template", "templates_from"]
