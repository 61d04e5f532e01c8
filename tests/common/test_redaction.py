"""A catalog's password travels apart from its connection string (as the
engine's secret) and is known as a secret however it is written."""

from __future__ import annotations

import pytest

from tasks.common.redaction import connection_string_passwords, without_password


@pytest.mark.parametrize("conninfo, rest, password", [
    ("postgres:dbname=lake host=db user=lake password=hunter2", "postgres:dbname=lake host=db user=lake", "hunter2"),
    ("postgres:dbname=lake password='a \\'quoted\\' one' host=db", "postgres:dbname=lake host=db",
     "a 'quoted' one"),
    ("postgres:postgresql://lake:s3cr%40t@db:5432/lake?sslmode=require",
     "postgres:postgresql://lake@db:5432/lake?sslmode=require", "s3cr@t"),
    ("postgres:postgresql://lake@db/lake", "postgres:postgresql://lake@db/lake", None),
    ("postgres:dbname=lake host=db", "postgres:dbname=lake host=db", None),
])
def test_the_password_is_taken_out_of_the_connection_string(conninfo, rest, password):
    assert without_password(conninfo) == (rest, password)
    assert connection_string_passwords(conninfo) == ([password] if password else [])
    if password:
        assert password not in without_password(conninfo)[0]
