"""Serve a corpus directory as a local Hugging Face Hub (point HF_ENDPOINT at it)."""

from __future__ import annotations

import argparse
from pathlib import Path

from tracker.errors import UsageError
from tracker.settings import Settings

NAME = "hubsim"
HELP = "serve a recorded corpus as a local Hub for huggingface_hub clients"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The corpus, the address, and the faults, latency, aliases and synthetic repos to serve."""
    parser.add_argument("--corpus", type=Path, required=True, help="directory with MANIFEST.json")
    parser.add_argument("--port", type=int, required=True, help="TCP port (0 picks a free one)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--faults",
        type=float,
        default=0.0,
        metavar="RATE",
        help="fail this share of requests (0-1) with 500, 503, 429, resets, cut bodies, 1-3 s delays",
    )
    parser.add_argument(
        "--fault-seed", type=int, default=0, metavar="N", help="seed of the injected faults"
    )
    parser.add_argument(
        "--synthetic",
        type=int,
        metavar="N",
        help="serve N generated repos whose histories take the corpus repos as templates",
    )
    parser.add_argument(
        "--seed", type=int, default=0, metavar="S", help="seed of the --synthetic repos (default 0)"
    )
    parser.add_argument(
        "--alias",
        action="append",
        default=[],
        metavar="LEGACY=ORG/NAME",
        help="answer a legacy id (gpt2) with a 307 to ORG/NAME, as the Hub does; repeatable",
    )
    parser.add_argument(
        "--latency",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="answer every request this much later (a remote Hub's round trip)",
    )


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Serve until interrupted; bad options or a port that cannot be bound exit 2."""
    from tracker.hubsim import HubEmulator, HubSimError, estimator_tensor_shapes
    from tracker.hubsim.synthetic import SyntheticStore

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: must be between 0 and 65535")
    if not 0.0 <= args.faults <= 1.0:
        raise UsageError(f"--faults {args.faults}: must be a share between 0 and 1")
    if args.synthetic is not None and args.synthetic < 1:
        raise UsageError(f"--synthetic {args.synthetic}: must be at least 1 repo")
    if args.latency < 0:
        raise UsageError(f"--latency {args.latency}: must not be negative")
    try:
        if args.synthetic is None:
            emulator = HubEmulator(args.corpus, tensor_shapes=estimator_tensor_shapes)
        else:
            store = SyntheticStore(args.synthetic, args.seed, args.corpus, estimator_tensor_shapes)
            emulator = HubEmulator(None, store=store)
    except HubSimError as exc:
        raise UsageError(str(exc)) from None
    for alias in args.alias:
        legacy, _, repo_id = alias.partition("=")
        try:
            emulator.alias_repo(legacy, repo_id)
        except HubSimError as exc:
            raise UsageError(f"--alias {alias}: {exc}") from None
    if args.latency:
        emulator.faults.latency(args.latency)
    count = len(emulator.store.repos)
    faults = ""
    if args.faults > 0:
        emulator.faults.transient_mix(args.faults, seed=args.fault_seed)
        faults = f", failing {args.faults:.0%} of requests (seed {args.fault_seed})"

    def announce(url: str) -> None:
        print(
            f"serving {count} repos at {url} (HF_ENDPOINT={url}){faults}; Ctrl-C to stop",
            flush=True,
        )

    try:
        emulator.serve_forever(args.host, args.port, announce)
    except OSError as exc:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from None
    return 0
