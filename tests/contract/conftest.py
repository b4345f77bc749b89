"""One Hub emulator per module over the corpus, set up as the contract rows need it.

Five repos, each row must pass on all of them: a sharded safetensors index on every one,
``meta-llama/Llama-2-7b-hf`` gated (manual, only ``TOKEN`` approved) through the
emulator's own controls, ``mistralai/Mistral-7B-Instruct-v0.3`` given a second branch
and a tag on top of its recorded pull-request refs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.contract.corpus_truth import RepoTruth, truth
from tracker.hubsim import HubEmulator, estimator_tensor_shapes

os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1")

GATED = "meta-llama/Llama-2-7b-hf"
BRANCHED = "mistralai/Mistral-7B-Instruct-v0.3"
REPOS = (
    "mistralai/Mistral-7B-v0.1",
    GATED,
    "openai/gpt-oss-20b",
    BRANCHED,
    "meta-llama/Llama-3.2-3B-Instruct",
)
TOKEN = "hf_contractreader"
"""Approved for the gated repo; @huggingface/hub refuses a token without the hf_ prefix."""
BRANCH, TAG = "dev", "v0.3"


@pytest.fixture(scope="module")
def contract_hub(corpus_dir: Path) -> Iterator[HubEmulator]:
    emulator = HubEmulator(corpus_dir, tensor_shapes=estimator_tensor_shapes)
    emulator.set_gated(GATED, "manual", approved=[TOKEN])
    emulator.create_branch(BRANCHED, BRANCH, revision=emulator.history(BRANCHED)[1].sha)
    emulator.create_tag(BRANCHED, TAG)
    emulator.start("127.0.0.1", 0)
    try:
        yield emulator
    finally:
        emulator.stop()


@pytest.fixture(scope="module")
def truths(corpus_dir: Path) -> dict[str, RepoTruth]:
    return {repo: truth(corpus_dir, repo) for repo in REPOS}
