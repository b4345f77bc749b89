"""Each repo path is matched against the artifact table once per process, with the same answer."""

from __future__ import annotations

from tracker.diff.registry import ARTIFACTS, artifact_for, rule_for


def test_a_path_is_matched_against_the_table_once() -> None:
    artifact_for.cache_clear()
    rule_for.cache_clear()
    paths = ["config.json", "model-00001-of-00002.safetensors", "tokenizer.json", "a/b.index.json"]
    for _ in range(3):
        found = [(artifact_for(p), rule_for(p)) for p in paths]
    walked = [next((k for k in ARTIFACTS if k.matches(p)), None) for p in paths]
    assert [kind for kind, _ in found] == walked
    rules = [kind and kind.rule_for(path) for kind, path in zip(walked, paths, strict=True)]
    assert [rule for _, rule in found] == rules
    assert walked[1] is None and walked[0] is not None and walked[0].name == "config"
    assert artifact_for.cache_info().misses == len(paths)
    assert rule_for.cache_info().misses == len(paths)
