"""Database helpers shared by the apps' migrations."""

from __future__ import annotations

from typing import Any


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
