"""Long values through a server, as psycopg sends and reads them: a 50 MB text and a
20 MB bytea round-trip whole (as parameters, in text and binary results, through COPY
out), grow and shrink with UPDATE, go with DELETE, and a row longer than one atomic write
is refused with SQLSTATE 54000 and nothing changed (PostgreSQL, whose limit is 1 GB per
value, takes it: the one difference). It prints `OK` at the end; any
failure names its step.

Usage: python3 large_values.py PORT
"""

import hashlib
import sys

import psycopg


def check(what, got, want):
    if got != want:
        raise SystemExit(f"{what}: got {got!r}, want {want!r}")


port = sys.argv[1]
with psycopg.connect(
    f"host=127.0.0.1 port={port} user=pmdb dbname=pmdb", autocommit=True
) as conn:
    conn.execute("DROP TABLE IF EXISTS docs")
    conn.execute("CREATE TABLE docs (id INT PRIMARY KEY, title TEXT, body TEXT, blob BYTEA)")
    text = "".join(chr(ord("a") + i % 26) for i in range(1000)) * 50_000
    data = hashlib.sha256(b"pmdb").digest() * (20_000_000 // 32)
    # One statement's writes fit in one memtable (64 MiB): one long row each.
    conn.execute("INSERT INTO docs VALUES (1, 'text', %s, NULL)", (text,))
    conn.execute("INSERT INTO docs VALUES (2, 'bytes', NULL, %s)", (data,))
    conn.execute("INSERT INTO docs VALUES (3, 'small', 'x', '\\x00')")
    check("lengths", conn.execute(
        "SELECT id, length(body), length(blob) FROM docs ORDER BY id"
    ).fetchall(), [(1, 50_000_000, None), (2, None, 20_000_000), (3, 1, 1)])
    check("text value", conn.execute("SELECT body FROM docs WHERE id = 1").fetchone()[0], text)
    with conn.cursor(binary=True) as cur:
        cur.execute("SELECT blob FROM docs WHERE id = %s", (2,))
        check("binary bytea", bytes(cur.fetchone()[0]), data)
    check("text bytea", bytes(conn.execute(
        "SELECT blob FROM docs WHERE title = 'bytes'").fetchone()[0]), data)
    copied = bytearray()
    with conn.cursor().copy("COPY (SELECT body FROM docs WHERE id = 1) TO STDOUT") as copy:
        for part in copy:
            copied += part
    check("COPY out", bytes(copied), text.encode() + b"\n")

    conn.execute("UPDATE docs SET body = body || 'tail' WHERE id = 1")
    check("grown", conn.execute(
        "SELECT length(body), right(body, 6) FROM docs WHERE id = 1").fetchone(),
        (50_000_004, "kltail"))
    conn.execute("UPDATE docs SET blob = NULL, body = 'now short' WHERE id = 2")
    conn.execute("DELETE FROM docs WHERE id = 1")
    check("after", conn.execute("SELECT id, body FROM docs ORDER BY id").fetchall(),
          [(2, "now short"), (3, "x")])

    # Beyond one memtable (64 MiB): refused, nothing written.
    try:
        conn.execute("INSERT INTO docs VALUES (4, 'huge', %s, NULL)", (text + text,))
        raise SystemExit("a 100 MB row was accepted")
    except psycopg.Error as e:
        check("SQLSTATE of a row beyond a memtable", e.sqlstate, "54000")
    check("rows", conn.execute("SELECT count(*) FROM docs").fetchone()[0], 2)
    conn.execute("DROP TABLE docs")
print("OK")
