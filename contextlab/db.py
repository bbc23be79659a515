"""Database helpers shared by the apps and their migrations."""

from __future__ import annotations

from typing import Any

from django.db import connections
from django.db.models import QuerySet, TextField
from django.db.models.functions import Cast
from psycopg.types.json import set_json_loads


def _as_received(data: str | bytes) -> str | bytes:
    """A JSON "loads" for psycopg that leaves the text as it came (bytes)."""
    return data


def json_texts(
    rows: QuerySet[Any], key: str | tuple[str, ...], column: str
) -> list[tuple[Any, ...]]:
    """(`key`, the stored JSON text of `column`) for each row, in the queryset's order; with a
    tuple of keys, each of them, then the text.

    On PostgreSQL the text comes as the bytes received, which orjson decodes as they are: a deep
    turn of a large session reads 100 MB of entries, and making a Python string of each first
    (what ``Cast(column, TextField())`` gets) cost a copy of all of it and an eighth of the
    fetch's time. Elsewhere (SQLite) the cast text."""
    keys = (key,) if isinstance(key, str) else key
    connection = connections[rows.db]
    if connection.vendor != "postgresql":
        return list(rows.annotate(raw=Cast(column, TextField())).values_list(*keys, "raw"))
    sql, params = rows.values_list(*keys, column).query.sql_with_params()
    with connection.cursor() as cursor:
        set_json_loads(_as_received, cursor.cursor)  # on this cursor only
        cursor.execute(sql, params)
        rows_read: list[tuple[Any, ...]] = cursor.fetchall()
    return rows_read


def set_column_compression(
    schema_editor: Any, table: str, columns: list[str], *, method: str = "lz4"
) -> None:
    """Compress the TOASTed values of `columns` with `method` where PostgreSQL offers it (lz4
    compresses several times faster than the default pglz); elsewhere (SQLite, servers built
    without lz4) leave the default. `method="default"` goes back to the server's default."""
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    if method != "default":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT %s = ANY(enumvals) FROM pg_settings"
                " WHERE name = 'default_toast_compression'",
                [method],
            )
            row = cursor.fetchone()
        if not (row and row[0]):
            return
    alters = ", ".join(f"ALTER COLUMN {column} SET COMPRESSION {method}" for column in columns)
    schema_editor.execute(f"ALTER TABLE {table} {alters}")
