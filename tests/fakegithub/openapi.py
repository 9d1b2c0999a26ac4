"""Check the fake's responses (and the bot's request bodies) against GitHub's OpenAPI subset.

The file is OpenAPI 3.0.3, whose schema dialect is not JSON Schema: `nullable: true` stands for
"or null", `$ref` hides its siblings, and `discriminator`/`example`/`x-*` are annotations. The
schemas are translated once into JSON Schema 2020-12, every `$ref` is made absolute against one
registry resource, and a validator is compiled per (operation, status) on first use.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from .http_types import JsonObject, Response

SPEC_NAME = "rest-api-subset.json"
_BASE_URI = "urn:github:rest-api-subset"
_DROPPED_KEYWORDS = {"nullable", "discriminator", "example", "examples", "deprecated"}
_RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$", re.IGNORECASE
)


def find_spec() -> Path:
    """The subset is vendored in tests/github_data, so a clone alone has it (see SOURCES.md)."""
    spec = Path(__file__).resolve().parents[1] / "github_data" / SPEC_NAME
    if not spec.is_file():
        raise FileNotFoundError(f"GitHub's OpenAPI subset is missing: {spec}")
    return spec


def to_json_schema(schema: Any) -> Any:
    """Translate one OpenAPI 3.0 schema object into JSON Schema 2020-12."""
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        return {"$ref": _BASE_URI + schema["$ref"]}  # OpenAPI 3.0 ignores a $ref's siblings
    out: JsonObject = {}
    for key, value in schema.items():
        if key in _DROPPED_KEYWORDS or key.startswith("x-"):
            continue
        if key == "properties":
            out[key] = {name: to_json_schema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not"):
            out[key] = to_json_schema(value)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [to_json_schema(sub) for sub in value]
        else:
            out[key] = value
    return _nullable(out) if schema.get("nullable") is True else out


def _nullable(schema: JsonObject) -> JsonObject:
    if "type" not in schema:
        return {"anyOf": [schema, {"type": "null"}]}
    widened = {**schema, "type": [schema["type"], "null"]}
    if "enum" in schema and None not in schema["enum"]:
        # GitHub writes `nullable` beside `enum` and means null is allowed (e.g. a running job's
        # conclusion), although a strict reading of OpenAPI 3.0.3 would forbid it.
        widened["enum"] = [*schema["enum"], None]
    return widened


def _format_checker() -> FormatChecker:
    checker = FormatChecker(formats=())

    @checker.checks("date-time")
    def is_date_time(value: object) -> bool:
        if not isinstance(value, str):
            return True
        if not _RFC3339.match(value):
            return False
        dt.datetime.fromisoformat(value.replace("z", "Z"))
        return True

    @checker.checks("uri")
    def is_uri(value: object) -> bool:
        if not isinstance(value, str):
            return True
        parts = urlsplit(value)
        return bool(parts.scheme) and " " not in value and not re.search(r"[\[\]]", parts.path)

    @checker.checks("email")
    def is_email(value: object) -> bool:
        return not isinstance(value, str) or "@" in value

    return checker


class OpenApiSpec:
    def __init__(self, document: JsonObject) -> None:
        self.document = document
        translated = {"components": {"schemas": _translate_all(document)}}
        resource = Resource.from_contents(translated, default_specification=DRAFT202012)
        self._registry: Registry[Any] = Registry().with_resource(_BASE_URI, resource)
        self._formats = _format_checker()
        self._validators: dict[tuple[str, ...], Draft202012Validator | None] = {}
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: Path | None = None) -> OpenApiSpec:
        return _load_cached(path or find_spec())

    def operation(self, method: str, template: str) -> JsonObject:
        try:
            return cast(JsonObject, self.document["paths"][template][method.lower()])
        except KeyError:
            raise KeyError(f"{method} {template} is not in the OpenAPI subset") from None

    def documentation_url(self, method: str, template: str) -> str:
        docs = self.operation(method, template).get("externalDocs", {})
        return str(docs.get("url", "https://docs.github.com/rest"))

    # ---- responses --------------------------------------------------------------------------

    def response_problems(self, method: str, template: str, response: Response) -> list[str]:
        """Every way `response` differs from what the subset documents; empty when it fits."""
        declared = self._declared_response(method, template, response.status)
        if declared is None:
            if response.status < 400:
                return [f"status {response.status} is not documented for {method} {template}"]
            declared = self._resolve(self.document["components"]["responses"]["not_found"])
        problems = list(self._header_problems(declared, response))
        content = declared.get("content", {})
        if not content:
            if response.body:
                problems.append(f"status {response.status} is documented without a body")
            return problems
        if not response.is_json or "application/json" not in content:
            return [*problems, f"status {response.status} must carry an application/json body"]
        key = ("response", method, template, str(response.status))
        problems.extend(self._schema_problems(key, content["application/json"], response.payload))
        return problems

    def _declared_response(self, method: str, template: str, status: int) -> JsonObject | None:
        responses = self.operation(method, template)["responses"]
        declared = responses.get(str(status)) or responses.get(f"{str(status)[0]}XX")
        return self._resolve(declared) if declared is not None else None

    def _header_problems(self, declared: JsonObject, response: Response) -> Iterator[str]:
        for name, header in declared.get("headers", {}).items():
            value = response.header(name)
            schema = self._resolve(header).get("schema", {})
            if value is None:
                if response.status in (301, 302, 307) and name.lower() == "location":
                    yield f"a {response.status} must carry a Location header"
            elif schema.get("type") == "integer" and not value.isdigit():
                yield f"header {name}={value!r} is not an integer"

    # ---- requests ---------------------------------------------------------------------------

    def request_problems(self, method: str, template: str, body: bytes) -> list[str]:
        """Why GitHub would refuse this JSON request body (400/422); empty when it is fine."""
        declared = self.operation(method, template).get("requestBody")
        if declared is None:
            return []
        media = self._resolve(declared).get("content", {}).get("application/json")
        if media is None or not body.strip():
            return []
        try:
            value = json.loads(body)
        except ValueError:
            return ["Problems parsing JSON"]
        return self._schema_problems(("request", method, template), media, value)

    # ---- shared -----------------------------------------------------------------------------

    def _schema_problems(self, key: tuple[str, ...], media: JsonObject, value: Any) -> list[str]:
        validator = self._validator(key, media)
        if validator is None:
            return []
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        return [f"at {_pointer(e.absolute_path)}: {e.message}"[:600] for e in errors[:5]]

    def _validator(self, key: tuple[str, ...], media: JsonObject) -> Draft202012Validator | None:
        with self._lock:
            if key not in self._validators:
                schema = media.get("schema")
                self._validators[key] = (
                    None
                    if schema is None
                    else Draft202012Validator(
                        to_json_schema(schema),
                        registry=self._registry,
                        format_checker=self._formats,
                    )
                )
            return self._validators[key]

    def _resolve(self, node: JsonObject) -> JsonObject:
        while "$ref" in node:
            _, section, name = node["$ref"].removeprefix("#/").split("/", 2)
            node = self.document["components"][section][name]
        return node


def _translate_all(document: JsonObject) -> JsonObject:
    schemas = document["components"]["schemas"]
    return {name: to_json_schema(schema) for name, schema in schemas.items()}


def _pointer(path: Any) -> str:
    return "/" + "/".join(str(part) for part in path) if path else "the top level"


@functools.cache
def _load_cached(path: Path) -> OpenApiSpec:
    return OpenApiSpec(json.loads(path.read_text()))
