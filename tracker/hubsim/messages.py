"""A request as the router sees it, a response as the server writes it, and the Hub's errors.

Error answers carry what the clients read: huggingface_hub maps ``X-Error-Code`` and
``X-Error-Message`` (utils/_http.py ``hf_raise_for_status``), @huggingface/hub reads the
JSON body's ``error`` (error.ts ``createApiError``); the Hub sends both.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from tracker.hubsim.blobs import Body, InlineBody
from tracker.hubsim.errors import HubSimError


@dataclass
class Request:
    """One request as routes read it: method, raw path, parsed query, headers and body."""

    method: str
    raw_path: str
    query: dict[str, list[str]]
    headers: Mapping[str, str]
    base_url: str = ""
    body: bytes = b""

    @property
    def token(self) -> str | None:
        """The bearer token of ``Authorization``; None for an anonymous request."""
        auth = self.headers.get("Authorization") or self.headers.get("authorization") or ""
        return auth.removeprefix("Bearer ").strip() or None

    def header(self, name: str) -> str | None:
        """The header ``name``, matched case-insensitively; None when absent."""
        lowered = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == lowered), None)

    def flag(self, name: str) -> bool:
        """Whether query parameter ``name`` is ``1`` or ``true`` (any case)."""
        return any(v.lower() in ("1", "true") for v in self.query.get(name, []))

    def values(self, name: str) -> list[str]:
        """Every value of query parameter ``name``, ``name[]`` too (as JS clients send lists)."""
        return self.query.get(name, []) + self.query.get(name + "[]", [])

    def number(self, name: str, default: int) -> int:
        """A non-negative integer query value; 400 for anything else, as the Hub answers."""
        text = (self.query.get(name) or [""])[0]
        if not text:
            return default
        if not text.isdigit():
            raise ErrorAnswer(400, None, f'"{name}" must be a non-negative integer')
        return int(text)

    def fields(self) -> dict[str, list[str]]:
        """The POST body's fields, form-encoded (huggingface_hub) or JSON (@huggingface/hub).

        A JSON ``{"paths": [...], "expand": true}`` becomes ``{"paths": [...], "expand":
        ["true"]}``, the shape the form encoding gives, so routes read one shape.
        """
        content_type = (self.header("Content-Type") or "").split(";")[0].strip().lower()
        if content_type != "application/json":
            return parse_qs(self.body.decode("utf-8", "replace"), keep_blank_values=True)
        try:
            document = json.loads(self.body or b"{}")
        except (ValueError, RecursionError):
            raise ErrorAnswer(400, None, "Invalid JSON body") from None
        if not isinstance(document, dict):
            raise ErrorAnswer(400, None, "The JSON body must be an object")
        fields: dict[str, list[str]] = {}
        for key, value in document.items():
            items = value if isinstance(value, list) else [value]
            fields[str(key)] = [
                json.dumps(v) if isinstance(v, bool) else str(v) for v in items if v is not None
            ]
        return fields


@dataclass
class Response:
    """What a route answers; the server adds Content-Length and applies faults and ranges."""

    status: int
    headers: dict[str, str]
    body: Body

    @classmethod
    def json(
        cls, data: Any, status: int = 200, headers: Mapping[str, str] | None = None
    ) -> Response:
        """A JSON answer, ``Content-Type: application/json; charset=utf-8``."""
        payload = json.dumps(data).encode()
        return cls(
            status,
            {"Content-Type": "application/json; charset=utf-8", **(headers or {})},
            InlineBody(payload),
        )

    @classmethod
    def text(cls, text: str, headers: Mapping[str, str] | None = None) -> Response:
        """A 200 plain-text answer (the compare route's diffs)."""
        return cls(
            200, {"Content-Type": "text/plain; charset=utf-8", **(headers or {})},
            InlineBody(text.encode()),
        )  # fmt: skip


class ErrorAnswer(HubSimError):
    """An error answer, raised inside a route and rendered as the Hub renders it.

    Not the tracker's HubError (what a client concludes from such an answer):
    this is the emulator's side, carrying the Response it sends.
    """

    def __init__(self, status: int, code: str | None, message: str, **headers: str) -> None:
        super().__init__(message)
        self.response = Response.json({"error": message}, status, headers)
        self.response.headers["X-Error-Message"] = message
        if code:
            self.response.headers["X-Error-Code"] = code
