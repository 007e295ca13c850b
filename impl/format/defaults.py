"""Default values of struct fields (Iceberg spec "Default values", Appendix D "JSON
single-value serialization"): a field's `initial-default` / `write-default` are kept in
their JSON form on `types.NestedField`; this module checks them against the field's type
(a module of its own: types.py cannot import conversions.py, which imports it).
"""
from __future__ import annotations

from typing import Any

from icefloe.impl.format import types as T
from icefloe.impl.format.conversions import from_json_value

__all__ = ["check_default", "check_schema_defaults"]


def check_default(t: T.IcebergType, value: Any, path: str) -> None:
    """FormatError unless `value` is the JSON single-value form of type `t`; a struct's
    default is null or `{}` (its fields carry their own)."""
    if isinstance(t, T.StructType):
        if value != {}:
            raise T.FormatError("a struct's default is null or {} (its fields carry their own)", path)
        return
    if isinstance(t, (T.ListType, T.MapType)):
        raise T.FormatError(f"icefloe does not support a non-null default for {t}", path)
    try:
        from_json_value(t, value)
    except (T.FormatError, ValueError, TypeError, ArithmeticError) as e:
        raise T.FormatError(f"not a {t} value: {e}", path) from None


def check_schema_defaults(schema: T.Schema, path: str = "schema") -> None:
    """Every default of `schema`'s fields fits its field's type (FormatError naming it)."""
    for f, name in T.walk_fields(schema):
        for key, value in (("initial-default", f.initial_default), ("write-default", f.write_default)):
            if value is not None:
                check_default(f.type, value, f"{path}.{name}.{key}")
