"""pi-ai's JSON-schema constrained sampling (``dist/api/constrained-sampling.js``, 0.86 on).

A tool declared with ``constrainedSampling: {type: "json_schema", strict}`` is sent strict
(``strict: true`` and its parameters rewritten to the strict subset: every property required,
an optional one made nullable with ``anyOf: [..., {type: "null"}]``, ``additionalProperties:
false``) where the provider supports strict tools, and as it is otherwise; a tool that requires
it fails the request where it cannot be strict. JSON has no ``undefined``: a key present (even
``null``) is "defined", as ``JSON.parse`` gives it to Pi.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from contextlab.pi.entries import Json

__all__ = [
    "UnsupportedStrictJsonSchemaError",
    "json_schema_tool_parameters",
    "make_strict_json_schema",
    "resolve_json_schema_strict_sampling",
]

_UNSUPPORTED_STRICT_SCHEMA_KEYS = (
    "$ref",
    "$defs",
    "definitions",
    "allOf",
    "oneOf",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
    "propertyNames",
    "contains",
    "prefixItems",
    "not",
    "if",
    "then",
    "else",
)


class UnsupportedStrictJsonSchemaError(Exception):
    pass


def _is_object(value: Any) -> bool:
    return isinstance(value, dict)


def _is_structured(schema: Any) -> bool:
    if not _is_object(schema):
        return False
    kind = schema.get("type")
    types = [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else []
    return "object" in types or "array" in types or "properties" in schema or "items" in schema


def _allows_null(schema: Any) -> bool:
    if not _is_object(schema):
        return False
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if ("const" in schema and schema["const"] is None) or (
        isinstance(schema.get("enum"), list) and None in schema["enum"]
    ):
        return True
    variants = schema.get("anyOf")
    return isinstance(variants, list) and any(_allows_null(v) for v in variants)


def _make_node_strict(schema: Any) -> None:
    """``makeJsonSchemaNodeStrict``: rewrites ``schema`` in place (key order as Pi leaves it)."""
    if not _is_object(schema):
        raise UnsupportedStrictJsonSchemaError("boolean schemas are unsupported")
    for key in _UNSUPPORTED_STRICT_SCHEMA_KEYS:
        if key in schema:
            raise UnsupportedStrictJsonSchemaError(f"{key} schemas are unsupported")
    if "anyOf" in schema:
        variants = schema["anyOf"]
        if not isinstance(variants, list) or not variants:
            raise UnsupportedStrictJsonSchemaError("anyOf must contain at least one schema")
        for variant in variants:
            if _is_structured(variant):
                raise UnsupportedStrictJsonSchemaError("object and array unions are unsupported")
            _make_node_strict(variant)
    if "items" in schema:
        if isinstance(schema["items"], list):
            raise UnsupportedStrictJsonSchemaError("tuple schemas are unsupported")
        _make_node_strict(schema["items"])
    is_object = schema.get("type") == "object"
    if "properties" in schema and not is_object:
        raise UnsupportedStrictJsonSchemaError("properties require type object")
    if not is_object:
        return
    if "additionalProperties" in schema and schema["additionalProperties"] is not False:
        raise UnsupportedStrictJsonSchemaError(
            "schema-valued or true additionalProperties is unsupported"
        )
    if "properties" in schema and not _is_object(schema["properties"]):
        raise UnsupportedStrictJsonSchemaError("object properties must be a schema map")
    if "required" in schema and (
        not isinstance(schema["required"], list)
        or any(not isinstance(k, str) for k in schema["required"])
    ):
        raise UnsupportedStrictJsonSchemaError("object required must be a string array")
    properties = schema.get("properties")
    if properties is None:
        properties = {}
    names = list(properties)
    required = set(schema["required"]) if isinstance(schema.get("required"), list) else set()
    if any(key not in names for key in required):
        raise UnsupportedStrictJsonSchemaError("required contains an unknown property")
    for key, prop in list(properties.items()):
        _make_node_strict(prop)
        if key not in required and not _allows_null(prop):
            properties[key] = {"anyOf": [prop, {"type": "null"}]}
    schema["required"] = names
    schema["additionalProperties"] = False


def make_strict_json_schema(schema: Any) -> Json:
    """``makeStrictJsonSchema``: a strict copy of a tool's parameters."""
    cloned = copy.deepcopy(schema)
    if not isinstance(cloned, dict):
        raise UnsupportedStrictJsonSchemaError("root schema must have type object")
    _make_node_strict(cloned)
    if cloned.get("type") != "object":
        raise UnsupportedStrictJsonSchemaError("root schema must have type object")
    return cloned


def resolve_json_schema_strict_sampling(
    tool: Mapping[str, Any], supports_strict_mode: bool
) -> bool | None:
    """``resolveJsonSchemaStrictSampling``: True (send strict), None (send as declared)."""
    config = tool.get("constrainedSampling")
    if not isinstance(config, dict) or config.get("type") != "json_schema":
        return None
    if supports_strict_mode:
        try:
            make_strict_json_schema(tool.get("parameters"))
            return True
        except UnsupportedStrictJsonSchemaError as error:
            if config.get("strict") != "require":
                return None
            raise ValueError(
                f'Tool "{tool.get("name")}" requires JSON-schema constrained sampling, but {error}.'
            ) from None
    if config.get("strict") == "require":
        raise ValueError(
            f'Tool "{tool.get("name")}" requires JSON-schema constrained sampling, '
            "but strict tools are unsupported."
        )
    return None


def json_schema_tool_parameters(tool: Mapping[str, Any], strict: bool | None) -> Any:
    """``getJsonSchemaToolParameters``."""
    return make_strict_json_schema(tool.get("parameters")) if strict else tool.get("parameters")
