"""Subscribe to alerts: tell me when a revision of these repos breaks my workload.

The flags build the same document a TOML ``[[subscriptions]]`` table holds
(tracker.alerts.spec); it is validated by the estimator's own rules before
anything is stored, so a card or workload the estimator would refuse is
refused here, as one line, exit 2. So is a channel whose host is not a public
address (loopback, private, link-local, cluster-internal names...) unless
``[alerts] allow`` or NEURARCH_ALERTS_ALLOW lists it (tracker.alerts.egress).
Every subscription has a page and an Atom feed of its alerts, so channels (a
signed webhook, apprise URLs) are optional.

Examples:

  neurarch-trace subscribe lora-t4 --repo 'meta-llama/*' --method lora \\
      --batch 8 --seq-len 512 --card T4 --alert-on fit,chat_template

  neurarch-trace subscribe serve-long --repo org/model --method serve \\
      --seq-len max --card L4 --webhook https://hooks.example/x --secret-env HOOK_SECRET
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from tracker.commands import UsageError
from tracker.settings import Settings

if TYPE_CHECKING:
    from tracker.alerts.spec import SubscriptionSpec
    from tracker.config_file import DaemonConfig

NAME = "subscribe"
HELP = "get alerts when a revision of matching repos no longer fits or changes what you watch"
ALERT_ON: Final = (
    "fit",
    "config",
    "generation_config",
    "tokenizer",
    "chat_template",
    "weights",
    "code",
    "card",
    "estimate",
    "repo",
)
"""What --alert-on may name: "fit" and the keys of tracker.alerts.spec.WATCHABLE.

Spelled out for the help text, so building the parser does not import the alerts
room and storage with it; a test holds the two equal.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument(
        "name", metavar="NAME", help="subscription name: letters, digits, '-', '_', '.' (in URLs)"
    )
    parser.add_argument(
        "--repo",
        action="append",
        default=[],
        metavar="PATTERN",
        help="repo id ORG/NAME or a shell glob such as 'meta-llama/*' (repeatable, at least one)",
    )
    workload = parser.add_argument_group("workload (what must keep fitting)")
    workload.add_argument(
        "--method",
        metavar="full|lora|qlora|serve",
        help="full fine-tune, LoRA, QLoRA (4-bit base) or inference serving (default lora)",
    )
    workload.add_argument("--batch", metavar="N", help="batch size, per GPU (default 1)")
    workload.add_argument(
        "--seq-len",
        metavar="N|max",
        help=(
            "tokens per sequence (default 512); 'max' means the model's own context length "
            "as each revision's config states it, so a revision that raises "
            "max_position_embeddings is re-estimated at the new length"
        ),
    )
    workload.add_argument(
        "--precision", metavar="bf16|fp16|fp32", help="weights/compute precision (default bf16)"
    )
    workload.add_argument(
        "--lora-rank", metavar="R", help="LoRA/QLoRA adapter rank (default 16; ignored otherwise)"
    )
    workload.add_argument(
        "--card",
        action="append",
        default=[],
        metavar="NAME",
        help="GPU card to check the fit on, e.g. T4, L4, 'A100 80GB' (repeatable; default A10G)",
    )
    workload.add_argument(
        "--gpus", metavar="N", help="the job is split over N of each card (default 1)"
    )
    alerts = parser.add_argument_group("what to alert on")
    alerts.add_argument(
        "--alert-on",
        action="append",
        default=[],
        metavar="LIST",
        help=(
            f"comma-separated, repeatable: {', '.join(ALERT_ON)}. 'fit' alerts when the "
            "workload stops (or starts) fitting a card; the others on changes to those files "
            "(default fit)"
        ),
    )
    alerts.add_argument(
        "--min-severity",
        metavar="info|low|moderate|high|critical",
        help="ignore file changes below this severity (default info: everything)",
    )
    channels = parser.add_argument_group(
        "channels (optional: every subscription also has an Atom feed)"
    )
    channels.add_argument(
        "--webhook",
        metavar="URL",
        help="POST each alert as JSON to this http(s) URL, signed with the secret",
    )
    secret = channels.add_mutually_exclusive_group()
    secret.add_argument(
        "--secret", metavar="S", help="the webhook's signing secret, 16+ ASCII characters"
    )
    secret.add_argument(
        "--secret-env",
        metavar="VAR",
        help="read the webhook secret from environment variable VAR now (keeps it out of ps)",
    )
    channels.add_argument(
        "--apprise",
        action="append",
        default=[],
        metavar="URL",
        help="also notify this apprise URL, e.g. discord://... or mailto://... (repeatable)",
    )
    parser.add_argument(
        "--replace", action="store_true", help="replace the subscription if NAME is already taken"
    )
    parser.add_argument(
        "--json", action="store_true", help="print what was stored as JSON (secrets redacted)"
    )


def build_document(args: argparse.Namespace) -> dict[str, Any]:
    """The subscription document the flags describe; unset flags keep the spec's defaults."""
    from tracker.alerts.spec import CONTEXT

    if not args.repo:
        raise UsageError("subscribe: give at least one --repo ORG/NAME or glob such as 'org/*'")
    document: dict[str, Any] = {"name": args.name, "repos": list(args.repo)}
    for key in ("method", "precision", "min_severity"):
        if getattr(args, key) is not None:
            document[key] = getattr(args, key)
    for key, flag in (("batch", "--batch"), ("lora_rank", "--lora-rank"), ("gpus", "--gpus")):
        if getattr(args, key) is not None:
            document[key] = _integer(flag, getattr(args, key))
    if args.seq_len is not None:
        text = args.seq_len.strip().lower()
        document["seq_len"] = (
            CONTEXT if text == CONTEXT else _integer("--seq-len", text, " or 'max'")
        )
    if args.card:
        document["cards"] = list(args.card)
    if args.alert_on:
        document["alert_on"] = [
            name.strip() for item in args.alert_on for name in item.split(",") if name.strip()
        ]
    document["channels"] = _channels(args)
    return document


def _integer(flag: str, text: str, alternative: str = "") -> int:
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"{flag} {text!r}: expected an integer{alternative}") from None


def _channels(args: argparse.Namespace) -> list[dict[str, str]]:
    if args.webhook is None and (args.secret is not None or args.secret_env is not None):
        raise UsageError("--secret/--secret-env sign a webhook: give --webhook URL as well")
    channels: list[dict[str, str]] = []
    if args.webhook is not None:
        webhook = {"type": "webhook", "url": args.webhook}
        if args.secret is not None:
            webhook["secret"] = args.secret
        if args.secret_env is not None:
            webhook["secret_env"] = args.secret_env
        channels.append(webhook)
    channels.extend({"type": "apprise", "url": url} for url in args.apprise)
    return channels


def public_base(config: DaemonConfig) -> str:
    """Where the daemon serves pages: [server].public_url, else http://host:port."""
    return (config.public_url or f"http://{config.host}:{config.port}").rstrip("/")


def page_urls(base: str, name: str) -> dict[str, str]:
    """The subscription's page and Atom feed."""
    return {
        "page": f"{base}/subscriptions/{name}",
        "feed": f"{base}/subscriptions/{name}/alerts.atom",
    }


def describe_workload(spec: SubscriptionSpec) -> str:
    """``LoRA r=16, batch 8 at 512 tokens, bf16, 1x each of T4, A10G``."""
    workload = spec.workload
    if workload.seq_len is None:  # describe() wants a number; "max" is read per revision
        text = workload.describe(0).replace(" 0 tokens", " the model's context length")
    else:
        text = workload.describe(workload.seq_len)
    return f"{text}, {workload.precision}, {spec.gpus}x each of {', '.join(spec.cards)}"


def describe(spec: SubscriptionSpec) -> list[str]:
    """What a person reads about a stored subscription (secrets redacted)."""
    lines = [
        f"  repos:     {', '.join(spec.repos)}",
        f"  workload:  {describe_workload(spec)}",
        f"  alert on:  {', '.join((['fit'] if spec.fit else []) + list(spec.artifacts))}",
        f"  severity:  {spec.min_severity.label} and above",
    ]
    if not spec.channels:
        lines.append("  channels:  none (the Atom feed carries the alerts)")
    for channel in spec.channels:
        secret = " (signed)" if channel.secret is not None else ""
        lines.append(f"  channel:   {channel.kind} {channel.url}{secret}")
    return lines


def run(args: argparse.Namespace, settings: Settings) -> int:
    from tracker.alerts.egress import Egress
    from tracker.alerts.registry import find, save_subscription
    from tracker.alerts.spec import parse_subscription
    from tracker.commands.common import open_storage, print_json, user_errors

    with user_errors():
        spec = parse_subscription(build_document(args))
        Egress(settings.daemon.alerts.allow).vet(spec)
        base = public_base(settings.daemon)
        with open_storage(settings) as database, database.session() as session:
            stored = find(session, spec.name)
            if stored is not None and stored.active and not args.replace:
                raise UsageError(
                    f"subscription {spec.name!r} exists; use --replace to change it "
                    "(or pick another name)"
                )
            _, created = save_subscription(session, spec, now=datetime.now(UTC))
            replaced = stored is not None and stored.active
    urls = page_urls(base, spec.name)
    if args.json:
        print_json(
            {
                "created": created,
                "replaced": replaced,
                "subscription": spec.to_document(redact=True),
                **urls,
            }
        )
        return 0
    print(f"{spec.name}: subscription {'replaced' if replaced else 'stored'}")
    for line in describe(spec):
        print(line)
    print(f"  page:      {urls['page']}")
    print(f"  feed:      {urls['feed']}")
    return 0


__all__ = [
    "HELP",
    "NAME",
    "add_arguments",
    "build_document",
    "describe",
    "describe_workload",
    "page_urls",
    "public_base",
    "run",
]
