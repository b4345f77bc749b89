"""Subscribe to alerts: tell me when a revision of these repos breaks my workload.

The flags are the subscription field table's (tracker.alerts.fields: one
option per field, its help and default from the table) and build the same
document a TOML ``[[subscriptions]]`` table holds (tracker.alerts.spec); it
is validated by the estimator's own rules before anything is stored, so a
card or workload the estimator would refuse is refused here, as one line,
exit 2. So is a channel whose host is not a public
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

from tracker.alerts.fields import CONTEXT, FIELDS, Field
from tracker.errors import UsageError
from tracker.settings import Settings

if TYPE_CHECKING:
    from tracker.alerts.spec import SubscriptionSpec
    from tracker.settings import DaemonConfig

NAME = "subscribe"
HELP = "get alerts when a revision of matching repos no longer fits or changes what you watch"
GROUP_TITLES: Final = {
    "workload": "workload (what must keep fitting)",
    "alerts": "what to alert on",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One option per field of the table (tracker.alerts.fields), then the channel options."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    groups: dict[str, argparse._ArgumentGroup] = {}
    for field in FIELDS:
        if field.type == "channels":
            continue  # a channel is a table: --webhook/--secret/--apprise build it
        if field.flag is None:
            parser.add_argument(field.name, metavar=field.metavar, help=field.help_text())
            continue
        if field.group in GROUP_TITLES:
            if field.group not in groups:
                groups[field.group] = parser.add_argument_group(GROUP_TITLES[field.group])
            target: argparse._ActionsContainer = groups[field.group]
        else:
            target = parser
        many: dict[str, Any] = {"action": "append", "default": []} if field.repeated else {}
        target.add_argument(
            field.flag, dest=field.name, metavar=field.metavar, help=field.help_text(), **many
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
        "--secret",
        metavar="S",
        help="the webhook's Standard Webhooks signing secret: whsec_ + base64 of 24-64 bytes",
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
    """The subscription document the flags describe; unset flags keep the table's defaults."""
    if not args.repos:
        raise UsageError("subscribe: give at least one --repo ORG/NAME or glob such as 'org/*'")
    document: dict[str, Any] = {}
    for field in FIELDS:
        if field.type == "channels":
            document[field.name] = _channels(args)
            continue
        value = getattr(args, field.name)
        if value is not None and value != []:
            document[field.name] = _value(field, value)
    return document


def _value(field: Field, given: Any) -> Any:
    """A flag's text as the field's JSON value; a list of choices may also be comma-separated."""
    flag = field.flag or field.name
    if field.type == "integer":
        return _integer(flag, given)
    if field.type == "integer_or_max":
        text = given.strip().lower()
        return CONTEXT if text == CONTEXT else _integer(flag, text, f" or '{CONTEXT}'")
    if field.type == "strings" and field.choices:
        return [name.strip() for item in given for name in item.split(",") if name.strip()]
    if field.type == "strings":
        return list(given)
    return given


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
    from tracker.alerts.spec import describe_job

    workload = spec.workload
    if spec.follow_context:  # describe_job wants a number; "max" is read per revision
        text = describe_job(workload, 0).replace(" 0 tokens", " the model's context length")
    else:
        text = describe_job(workload, workload.seq_len)
    return f"{text}, {workload.precision}, {spec.gpus}x each of {', '.join(spec.cards)}"


def describe(spec: SubscriptionSpec) -> list[str]:
    """What a person reads about a stored subscription (secrets redacted)."""
    lines = [
        f"  repos:     {', '.join(spec.repos)}",
        f"  workload:  {describe_workload(spec)}",
        f"  engine:    {spec.engine or 'none (peak memory against each card)'}",
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
    """Store the subscription (commits), refusing an existing name without ``--replace``.

    A channel whose host alerts may not reach is refused before anything is stored.
    """
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
