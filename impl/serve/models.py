"""Request bodies of the REST catalog (REST spec: CreateNamespaceRequest,
UpdateNamespacePropertiesRequest, CreateTableRequest, RegisterTableRequest,
RenameTableRequest, CommitTableRequest, CommitTransactionRequest), as pydantic models.

Only the shape is checked here; what a schema, spec, requirement or update means is read
by icefloe's own format code (types.schema_from_json, requirements.py, updates.py), whose
errors name the field. `parse(model, body)` turns any shape error into a 400 ErrorModel.
"""
from __future__ import annotations

import json
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from icefloe.impl.serve.errors import bad_request

JSON_DEPTH_MAX = 64  # deeper bodies are refused before parsing (nested types stay far below)


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class CreateNamespaceRequest(_Body):
    namespace: list[str]
    properties: dict[str, str] = Field(default_factory=dict)


class UpdateNamespacePropertiesRequest(_Body):
    removals: list[str] = Field(default_factory=list)
    updates: dict[str, str] = Field(default_factory=dict)


class TableIdentifierModel(_Body):
    namespace: list[str]
    name: str


class CreateTableRequest(_Body):
    name: str
    location: Optional[str] = None
    schema_: dict[str, Any] = Field(alias="schema")
    partition_spec: Optional[dict[str, Any]] = Field(default=None, alias="partition-spec")
    write_order: Optional[dict[str, Any]] = Field(default=None, alias="write-order")
    stage_create: bool = Field(default=False, alias="stage-create")
    properties: dict[str, str] = Field(default_factory=dict)


class RegisterTableRequest(_Body):
    name: str
    metadata_location: str = Field(alias="metadata-location")
    overwrite: bool = False


class RenameTableRequest(_Body):
    source: TableIdentifierModel
    destination: TableIdentifierModel


class CommitTableRequest(_Body):
    identifier: Optional[TableIdentifierModel] = None
    requirements: list[dict[str, Any]]
    updates: list[dict[str, Any]]


class CommitTransactionRequest(_Body):
    table_changes: list[CommitTableRequest] = Field(alias="table-changes")


def _depth(value: Any, limit: int) -> int:
    """The nesting depth of a JSON value, stopping once past `limit` (iterative)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return deepest


def read_json(raw: bytes) -> Any:
    """The request body as JSON; a 400 for anything else (NaN and Infinity included)."""
    def constant(name):
        raise ValueError(f"{name} is not JSON")
    try:
        value = json.loads(raw or b"null", parse_constant=constant)
    except (ValueError, RecursionError) as e:
        raise bad_request(f"Malformed request: the body is not JSON: {str(e)[:200]}") from None
    if _depth(value, JSON_DEPTH_MAX) > JSON_DEPTH_MAX:
        raise bad_request(f"Malformed request: JSON nested deeper than {JSON_DEPTH_MAX}")
    return value


def parse(model: type[_Body], raw: bytes) -> _Body:
    value = read_json(raw)
    if not isinstance(value, dict):
        raise bad_request(f"Malformed request: expected a JSON object for {model.__name__}")
    try:
        return model.model_validate(value)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise bad_request(f"Malformed {model.__name__}: {where}: {first.get('msg')}") from None
