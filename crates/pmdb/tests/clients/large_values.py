"""Long values through a server, as psycopg sends and reads them: a 50 MB text and a
20 MB bytea round-trip whole (as parameters, in text and binary results, through COPY
out), grow and shrink with UPDATE, go with DELETE; a 100 MB row and a statement writing
100 MB (more than a 64 MiB memtable each) commit whole, and a block writing 100 MB rolls
back whole. It prints `OK` at the end; any failure names its step.

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

    # Beyond one memtable (64 MiB): a 100 MB row, then a statement writing 100 MB.
    conn.execute("INSERT INTO docs VALUES (4, 'huge', %s, NULL)", (text + text,))
    check("100 MB row", conn.execute("SELECT body FROM docs WHERE id = 4").fetchone()[0],
          text + text)
    conn.execute("INSERT INTO docs SELECT g, 'gen', repeat('y', 1000000), NULL"
                 " FROM generate_series(10, 109) AS g")
    check("100 MB statement", conn.execute(
        "SELECT count(*), sum(length(body)) FROM docs WHERE id >= 10").fetchone(),
        (100, 100_000_000))
    # A block writing as much rolls back whole.
    with conn.transaction(force_rollback=True):
        conn.execute("DELETE FROM docs WHERE id >= 10")
        conn.execute("INSERT INTO docs VALUES (5, 'huge', %s, NULL)", (text + text,))
    check("rows", conn.execute("SELECT count(*) FROM docs").fetchone()[0], 103)
    conn.execute("DROP TABLE docs")
print("OK")
