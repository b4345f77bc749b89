"""Hub access through huggingface_hub, snapshots, semantic diffs, scheduling, the CLI."""

__all__: list[str] = []
