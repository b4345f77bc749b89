"""Audit the model revisions a project uses, as pip-audit does for packages.

Pins come from any mix of: REPO[@REV] arguments, a lock file (--lock, TOML:
one [[model]] table per model with repo, revision, and optionally workload and
cards; see README.md), the local Hugging Face cache (--hf-cache, every
cached repo and revision) and Python sources (--scan-src DIR: literal
from_pretrained, hf_hub_download, snapshot_download and pipeline(model=...)
calls, read with ast). For each pin it reports the advisories published for
revisions after it on main, the newest revision, and, given a workload and
cards, whether it fits now and at the newest revision.

Advisories come from the local database, or from --server URL: any
OSV-compatible API (/v1/querybatch, /v1/vulns/{id}), such as a remote
`neurarch-trace serve`. Exit codes: 1 when a finding reaches --min-severity,
0 when none does, 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tracker.commands import UsageError
from tracker.settings import Settings

if TYPE_CHECKING:
    from tracker.audit.check import PinReport
    from tracker.audit.pins import Pin

NAME = "audit"
HELP = "report which pinned model revisions upstream changes affect (pip-audit for models)"
FORMATS = ("table", "json", "markdown", "sarif", "cyclonedx-vex")
SEVERITIES = ("info", "low", "moderate", "high", "critical")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pins", metavar="REPO[@REV]", nargs="*", help="models to audit")
    parser.add_argument(
        "--lock",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="a models.lock file (TOML, [[model]] tables); repeatable",
    )
    parser.add_argument(
        "--hf-cache",
        nargs="?",
        const="",
        default=None,
        metavar="DIR",
        help="audit every revision in the HF cache (default: huggingface_hub's)",
    )
    parser.add_argument(
        "--scan-src",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="find literal pins in the Python sources under DIR; repeatable",
    )
    parser.add_argument(
        "--server",
        metavar="URL",
        help="read advisories from this OSV-compatible API, not the local database",
    )
    parser.add_argument("--format", choices=FORMATS, default="table")
    parser.add_argument("--output", type=Path, metavar="FILE", help="write the report here")
    parser.add_argument(
        "--min-severity",
        choices=SEVERITIES,
        default="low",
        help="exit 1 when a finding is at least this severe (default: low)",
    )
    parser.add_argument(
        "--method",
        choices=("full", "lora", "qlora", "serve"),
        help="workload for the fit check of pins without their own",
    )
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument(
        "--card",
        action="append",
        default=[],
        metavar="NAME",
        help="card to check the workload on; repeatable",
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=Path("."),
        help="paths in SARIF are relative to this directory (default: .)",
    )


def run(args: argparse.Namespace, settings: Settings) -> int:
    from storage.records import Severity
    from tracker.audit.check import exit_code
    from tracker.commands.common import user_errors

    with user_errors():
        if not (args.pins or args.lock or args.scan_src or args.hf_cache is not None):
            raise UsageError("nothing to audit: give REPO[@REV], --lock, --hf-cache or --scan-src")
        pins = collect_pins(args)
        reports = audit(pins, args, settings)
    text = render(reports, args)
    if args.output is not None:
        args.output.write_text(text, "utf-8")
    else:
        sys.stdout.write(text)
    return exit_code(reports, Severity.parse(args.min_severity))


def collect_pins(args: argparse.Namespace) -> list[Pin]:
    """Every pin from every input, in the order the inputs were given; defaults applied."""
    from dataclasses import replace

    from tracker.audit.local_sources import pins_from_hf_cache, pins_from_sources
    from tracker.audit.pins import card_names, pin_from_argument, pins_from_lock_file, workload_of

    pins = [pin_from_argument(text) for text in args.pins]
    for lock in args.lock:
        pins.extend(pins_from_lock_file(lock))
    if args.hf_cache is not None:
        pins.extend(pins_from_hf_cache(Path(args.hf_cache) if args.hf_cache else None))
    for root in args.scan_src:
        pins.extend(pins_from_sources(root))
    if args.method is None:
        return pins
    workload = workload_of(
        {"method": args.method, "batch": args.batch, "seq_len": args.seq_len}, "command line"
    )
    cards = card_names(args.card, "--card")
    return [
        p if p.workload is not None else replace(p, workload=workload, cards=p.cards or cards)
        for p in pins
    ]


def audit(pins: list[Pin], args: argparse.Namespace, settings: Settings) -> list[PinReport]:
    """The reports, with advisories from --server or the local database."""
    from tracker.audit.advisories import AdvisorySource, DatabaseAdvisories, OsvServerAdvisories
    from tracker.audit.check import Auditor
    from tracker.audit.history import DatabaseHistory, FirstKnown, HubHistory, MainHistory
    from tracker.audit.pins import canonical_pins
    from tracker.hub import Hub
    from tracker.local_database import existing_database
    from tracker.plan_fetch import fetch_inputs

    hub = Hub.from_settings(settings)
    pins = canonical_pins(pins, hub.known_id)
    with existing_database(settings.storage.database_url) as database:
        source: AdvisorySource
        if args.server is not None:
            source = OsvServerAdvisories(args.server)
        elif database is not None:
            source = DatabaseAdvisories(database)
        else:
            raise UsageError(
                "no local database to read advisories from: run `neurarch-trace track`, "
                "or give --server URL of an OSV-compatible API"
            )
        histories: list[MainHistory] = [DatabaseHistory(database)] if database else []
        histories.append(HubHistory(hub))
        auditor = Auditor(
            source,
            FirstKnown(histories),
            hub.head_sha,
            lambda ref: fetch_inputs(ref, settings),
        )
        return auditor.audit(pins)


def render(reports: list[PinReport], args: argparse.Namespace) -> str:
    from tracker.audit import render as plain

    if args.format == "sarif":
        from tracker.audit.sarif import to_sarif

        return to_sarif(reports, args.root)
    if args.format == "cyclonedx-vex":
        from tracker.audit.vex import to_vex

        return to_vex(reports)
    if args.format == "json":
        return plain.to_json(reports)
    if args.format == "markdown":
        return plain.to_markdown(reports)
    return plain.to_table(reports)
