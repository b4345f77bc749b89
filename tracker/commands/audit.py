"""Audit the model revisions a project uses, as pip-audit does for packages.

Pins come from any mix of: REPO[@REV] arguments, a lock file (--lock, TOML:
one [[model]] table per model with repo, revision, and optionally workload and
cards; see README.md; or Hermeto's huggingface.lock.yaml), the local Hugging Face cache (--hf-cache, every
cached repo and revision) and Python sources (--scan-src DIR: literal
from_pretrained, hf_hub_download, snapshot_download and pipeline(model=...)
calls, read with ast). For each pin it reports the advisories published for
revisions after it on main, the newest revision, and, given a workload and
cards, whether it fits now and at the newest revision.

Advisories come from the local database, or from --server URL: any
OSV-compatible API (/v1/querybatch, /v1/vulns/{id}), such as a remote
`neurarch-trace serve`. A pin the audit cannot judge is reported as such: its
repo is not tracked here, revisions after it have not been processed (nothing
published yet), or the Hub or the advisory server did not answer. Exit codes:
0 clean, 1 a finding reaches --min-severity, 2 bad input, 3 the audit could
not complete (some pin could not be judged; this wins over 1).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tracker.errors import UsageError
from tracker.settings import Settings

if TYPE_CHECKING:
    from tracker.audit.check import PinReport
    from tracker.audit.ignore import IgnoreRule
    from tracker.audit.pins import Pin

NAME = "audit"
HELP = "report which pinned model revisions upstream changes affect (pip-audit for models)"
FORMATS = ("table", "json", "markdown", "sarif", "cyclonedx-vex")
SEVERITIES = ("info", "low", "moderate", "high", "critical")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Where pins come from, where advisories come from, the report and the fit check."""
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
        "--ignore",
        action="append",
        default=[],
        metavar="ID",
        help="accept this advisory (or finding rule id) for this run; repeatable",
    )
    parser.add_argument(
        "--ignore-file",
        type=Path,
        metavar="FILE",
        help="TOML [[ignore]] tables: id or kind, reason, optional repo glob and until date",
    )
    parser.add_argument(
        "--fix",
        action="store_true",
        help="move each lock-file pin to the newest revision on main that crosses no advisory "
        "at or above --min-severity and still fits its cards; rewrite the lock files, "
        "print what moved and why others did not, then audit the moved pins",
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=Path("."),
        help="paths in SARIF are relative to this directory (default: .)",
    )


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Exit 0 clean, 1 a finding reaches --min-severity, 3 the audit could not complete.

    Reads the Hub (and --server) over the network; --fix rewrites the lock files.
    """
    from storage.records import Severity
    from tracker.audit.advisories import AdvisoryServerError
    from tracker.audit.check import INCOMPLETE, exit_code
    from tracker.commands.common import user_errors

    with user_errors():
        if not (args.pins or args.lock or args.scan_src or args.hf_cache is not None):
            raise UsageError("nothing to audit: give REPO[@REV], --lock, --hf-cache or --scan-src")
        if args.fix and not args.lock:
            raise UsageError("--fix rewrites lock files: give --lock FILE")
        pins = collect_pins(args)
        try:
            reports = audit(pins, args, settings)
        except AdvisoryServerError as exc:
            print(f"neurarch-trace: could not complete the audit: {exc}", file=sys.stderr)
            return INCOMPLETE
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
    from tracker.audit.locks import pins_from_lock
    from tracker.audit.pins import card_names, pin_from_argument, workload_of

    pins = [pin_from_argument(text) for text in args.pins]
    for lock in args.lock:
        pins.extend(pins_from_lock(lock))
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
    from dataclasses import replace
    from datetime import date

    from storage.records import Severity
    from tracker.audit.advisories import AdvisorySource, DatabaseAdvisories, OsvServerAdvisories
    from tracker.audit.check import Auditor
    from tracker.audit.fix import choose_moves, rewrite_locks
    from tracker.audit.history import FirstKnown, HubHistory
    from tracker.audit.ignore import apply_ignores
    from tracker.audit.pins import canonical_pins
    from tracker.audit.remote import add_remote_code_findings
    from tracker.hub.client import Hub
    from tracker.reads.local_database import existing_database
    from tracker.reads.plan_fetch import fetch_inputs

    hub = Hub.from_settings(settings.hub)
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
        # Main as the Hub lists it now: what the local database has not recorded after a
        # pin is "nothing published yet" (AdvisorySource.gap), not "no finding".
        history = FirstKnown([HubHistory(hub)])
        auditor = Auditor(source, history, hub.head_sha, lambda ref: fetch_inputs(ref, settings))
        rules = ignore_rules_of(args)
        found = auditor.audit(pins)
        if database is not None:
            found = add_remote_code_findings(found, database)
        reports = apply_ignores(found, rules, date.today())
        if not args.fix:
            return reports
        minimum = Severity.parse(args.min_severity)
        moves = choose_moves(reports, history, auditor, minimum)
        rewrite_locks(moves)
        for move in moves:
            print(move.line(), file=sys.stderr)
        moved = {m.pin: replace(m.pin, revision=m.new) for m in moves if m.new is not None}
        again = auditor.audit([moved.get(p, p) for p in pins])
        if database is not None:
            again = add_remote_code_findings(again, database)
        return apply_ignores(again, rules, date.today())


def ignore_rules_of(args: argparse.Namespace) -> list[IgnoreRule]:
    """--ignore-file's rules, then each --ignore."""
    from tracker.audit.ignore import ignore_argument, ignore_rules

    rules = ignore_rules(args.ignore_file) if args.ignore_file is not None else []
    return rules + [ignore_argument(text) for text in args.ignore]


def render(reports: list[PinReport], args: argparse.Namespace) -> str:
    """The report in ``--format``; SARIF and VEX import their libraries only when asked."""
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
