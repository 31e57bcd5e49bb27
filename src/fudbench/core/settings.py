"""Settings declared once, as dataclasses, and validated from that declaration.

A component (evaluator, sampler part ...) declares its settings as a
dataclass whose fields carry the defaults and, through `setting(...)`, the
constraints and a description. `settings_schema` turns the dataclass into
the JSON schema the config is validated with at parse time, so the
dataclass is the one home of both defaults and constraints; `with_defaults`
fills in what a config entry leaves out.

Torch-free: the Snakefile imports it at parse time.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Literal, Union

_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", dict: "object"}
# JSON-schema keywords a field may carry in its metadata
_KEYWORDS = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "uniqueItems",
    "items",
    "description",
    "enum",
)


class Settings:
    """Base of settings dataclasses. Checks across fields (or beyond what a
    JSON schema says) go in `problems`, one message per problem naming `key`."""

    def problems(self, key: str) -> list[str]:
        return []


def setting(default=dataclasses.MISSING, *, default_factory=dataclasses.MISSING, **schema) -> Any:
    """A dataclass field with JSON-schema constraints, e.g.
    `steps: int = setting(100, minimum=1, description="DDIM steps")`.
    `schema` may also give a whole fragment as schema={...}."""
    unknown = set(schema) - set(_KEYWORDS) - {"schema"}
    if unknown:
        raise TypeError(f"setting(): unknown schema keyword(s) {sorted(unknown)}; allowed: {_KEYWORDS}")
    return dataclasses.field(default=default, default_factory=default_factory, metadata=schema)


def _type_schema(tp) -> dict:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Literal:
        return {"enum": list(args)}
    if origin is Union:
        options = [_type_schema(a) for a in args if a is not type(None)]
        schema = options[0] if len(options) == 1 else {"anyOf": options}
        if type(None) in args:
            schema = {"anyOf": [schema, {"type": "null"}]}
        return schema
    if origin in (list, tuple) or tp in (list, tuple):
        item = args[0] if args else None
        return {"type": "array", **({"items": _type_schema(item)} if item not in (None, Ellipsis, Any) else {})}
    if origin is dict or tp is dict:
        return {"type": "object"}
    if tp is float:  # an integer is a valid float setting (YAML writes 1, not 1.0)
        return {"type": "number"}
    if tp in _JSON_TYPES:
        return {"type": _JSON_TYPES[tp]}
    if tp is Any:
        return {}
    raise TypeError(f"no JSON schema for the setting type {tp!r}")


def _field_schema(field, tp) -> dict:
    meta = dict(field.metadata)
    if "schema" in meta:
        return {**meta.pop("schema"), **meta}
    schema = _type_schema(tp)
    if "items" in meta and schema.get("type") == "array":
        schema["items"] = {**schema.get("items", {}), **meta.pop("items")}
    if any(k in meta for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")) and "anyOf" in schema:
        bounds = {k: meta.pop(k) for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") if k in meta}
        schema["anyOf"] = [{**s, **bounds} if s.get("type") != "null" else s for s in schema["anyOf"]]
    return {**schema, **meta}


def settings_schema(cls, *, extra: dict | None = None, description: str | None = None) -> dict:
    """The JSON schema of a settings dataclass: one property per field, no
    other keys allowed (extra: more properties, e.g. `method`); the fields
    without a default are required, the others take their defaults."""
    hints = typing.get_type_hints(cls)
    properties = {f.name: _field_schema(f, hints[f.name]) for f in dataclasses.fields(cls)}
    schema = {"type": "object", "additionalProperties": False, "properties": {**properties, **(extra or {})}}
    required = [f.name for f in dataclasses.fields(cls) if f.name not in defaults(cls)]
    if required:
        schema["required"] = required
    if description:
        schema["description"] = description
    return schema


def defaults(cls) -> dict:
    """{field: default} of a settings dataclass."""
    out = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def with_defaults(cls, settings: dict | None, *, keep=("method",)) -> dict:
    """The config entry's settings over the dataclass defaults (keys in `keep`,
    such as `method`, pass through). Unknown or missing required keys raise,
    naming the allowed ones."""
    settings = dict(settings or {})
    allowed = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(settings) - allowed - set(keep))
    if unknown:
        raise ValueError(f"unknown setting(s) {unknown}; allowed: {', '.join(sorted(allowed)) or 'none'}")
    missing = sorted(allowed - set(defaults(cls)) - set(settings))
    if missing:
        raise ValueError(f"missing setting(s) {missing}")
    return {**defaults(cls), **settings}


def _is_integer(checker, instance) -> bool:
    return isinstance(instance, int) and not isinstance(instance, bool)


_VALIDATOR = None


def schema_validator(schema: dict):
    """A draft 2020-12 JSON-schema validator whose `integer` is an int only. JSON Schema counts 6.0 as an
    integer, and such a float then broke a slice (`data.n_eval: 6.0`: "slice indices must be integers",
    naming no key) or became another seed key (`seed: 1.0` is the string "1.0" in derive_seed, so it drew
    other noise than `seed: 1`). Every config and settings check uses this one (integral_float_message)."""
    global _VALIDATOR
    if _VALIDATOR is None:
        from jsonschema import Draft202012Validator, validators

        checker = Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer)
        _VALIDATOR = validators.extend(Draft202012Validator, type_checker=checker)
    return _VALIDATOR(schema)


def _wants_integer(error) -> bool:
    """The schema error is an integer type check (directly, or one branch of an anyOf/oneOf)."""
    if error.validator == "type":
        types = error.validator_value
        return "integer" in ([types] if isinstance(types, str) else types)
    return error.validator in ("anyOf", "oneOf") and any(_wants_integer(e) for e in error.context or ())


def integral_float_message(error) -> str | None:
    """'6.0 is a float; write 6' for a float where an integer is meant (else None)."""
    value = error.instance
    if isinstance(value, float) and _wants_integer(error):
        if value.is_integer():
            return f"{value!r} is a float; write {int(value)} (an integer is meant here)"
        return f"{value!r} is not an integer"
    return None
