#!/usr/bin/env python3
"""Relation locks as clients see them, against pmdb and PostgreSQL alike.

Each scenario drives two or three connections (psycopg 3, autocommit, blocks begun by
hand) through DDL, reads and writes of one table, and records what each step saw: its
rows or SQLSTATE, and whether it had to wait for another connection. The same scenarios
run against every server given, and the script prints each scenario's record side by
side and exits 1 when the records differ.

    python3 scripts/compat/relation_locks.py \\
        postgresql://postgres@127.0.0.1:5432/postgres \\
        postgresql://pmdb@127.0.0.1:5433/postgres
"""

import sys
import threading
import time

import psycopg

SETUP = [
    "DROP TABLE IF EXISTS accounts",
    "CREATE TABLE accounts (id INT PRIMARY KEY, owner TEXT, balance BIGINT)",
    "INSERT INTO accounts VALUES (1, 'ann', 100), (2, 'bob', 50)",
]

# How long a statement must take to count as waiting for another connection.
WAIT = 0.5


class Step:
    """A statement started on a connection of its own thread, finished later."""

    def __init__(self, conn, sql):
        self.out = None
        self.thread = threading.Thread(target=self._run, args=(conn, sql))
        self.thread.start()

    def _run(self, conn, sql):
        self.out = outcome(conn, sql)

    def waits(self):
        self.thread.join(WAIT)
        return self.thread.is_alive()

    def result(self):
        self.thread.join(30)
        return "still waiting after 30 s" if self.thread.is_alive() else self.out


def outcome(conn, sql):
    try:
        cur = conn.execute(sql)
        if cur.description is None:
            return cur.statusmessage
        return [tuple(str(v) for v in row) for row in cur.fetchall()]
    except psycopg.Error as e:
        return e.sqlstate


def reader_then_ddl(dsn, ddl):
    a, b = psycopg.connect(dsn, autocommit=True), psycopg.connect(dsn, autocommit=True)
    seen = []
    all_rows = "SELECT * FROM accounts ORDER BY id"
    a.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    seen.append(outcome(a, all_rows))
    step = Step(b, ddl)
    seen.append(("ddl waits", step.waits()))
    seen.append(outcome(a, all_rows))
    a.execute("COMMIT")
    seen.append(("ddl", step.result()))
    seen.append(outcome(a, all_rows))
    a.close(), b.close()
    return seen


def reader_during_open_ddl(dsn, end):
    a, b = psycopg.connect(dsn, autocommit=True), psycopg.connect(dsn, autocommit=True)
    seen = []
    a.execute("BEGIN")
    a.execute("ALTER TABLE accounts ADD COLUMN note TEXT DEFAULT 'x'")
    step = Step(b, "SELECT * FROM accounts ORDER BY id")
    seen.append(("read waits", step.waits()))
    a.execute(end)
    seen.append(("read", step.result()))
    a.close(), b.close()
    return seen


def open_create_index(dsn):
    a, b, c = (psycopg.connect(dsn, autocommit=True) for _ in range(3))
    seen = []
    a.execute("BEGIN")
    a.execute("CREATE INDEX by_owner ON accounts (owner)")
    step = Step(b, "SELECT count(*) FROM accounts")
    seen.append(("read waits", step.waits(), step.result()))
    b.execute("BEGIN")
    step = Step(b, "SELECT owner FROM accounts WHERE id = 2 FOR UPDATE")
    seen.append(("for update waits", step.waits(), step.result()))
    b.execute("COMMIT")
    step = Step(c, "INSERT INTO accounts VALUES (3, 'cy', 5)")
    seen.append(("insert waits", step.waits()))
    a.execute("COMMIT")
    seen.append(("insert", step.result()))
    a.close(), b.close(), c.close()
    return seen


def queued_behind_ddl(dsn):
    a, b, c, d = (psycopg.connect(dsn, autocommit=True) for _ in range(4))
    seen = []
    a.execute("BEGIN")
    a.execute("INSERT INTO accounts VALUES (3, 'cy', 5)")
    index = Step(b, "CREATE INDEX by_owner ON accounts (owner)")
    seen.append(("index waits", index.waits()))
    read = Step(c, "SELECT count(*) FROM accounts")
    seen.append(("late read waits", read.waits(), read.result()))
    write = Step(d, "INSERT INTO accounts VALUES (4, 'dee', 6)")
    seen.append(("late insert waits", write.waits()))
    a.execute("COMMIT")
    seen.append(("index", index.result()))
    seen.append(("late insert", write.result()))
    for conn in (a, b, c, d):
        conn.close()
    return seen


def reader_writes_past_queued_drop(dsn):
    a, b = psycopg.connect(dsn, autocommit=True), psycopg.connect(dsn, autocommit=True)
    seen = []
    a.execute("BEGIN")
    seen.append(outcome(a, "SELECT count(*) FROM accounts"))
    drop = Step(b, "DROP TABLE accounts")
    seen.append(("drop waits", drop.waits()))
    seen.append(outcome(a, "INSERT INTO accounts VALUES (3, 'cy', 5)"))
    a.execute("COMMIT")
    seen.append(("drop", drop.result()))
    a.close(), b.close()
    return seen


SCENARIOS = [
    ("RR reader, then TRUNCATE", lambda d: reader_then_ddl(d, "TRUNCATE accounts")),
    ("RR reader, then DROP TABLE", lambda d: reader_then_ddl(d, "DROP TABLE accounts")),
    (
        "RR reader, then DROP COLUMN",
        lambda d: reader_then_ddl(d, "ALTER TABLE accounts DROP COLUMN owner"),
    ),
    (
        "RR reader, then ALTER TYPE",
        lambda d: reader_then_ddl(
            d, "ALTER TABLE accounts ALTER COLUMN balance TYPE NUMERIC(12,2)"
        ),
    ),
    ("read during open ALTER, rolled back", lambda d: reader_during_open_ddl(d, "ROLLBACK")),
    ("read during open ALTER, committed", lambda d: reader_during_open_ddl(d, "COMMIT")),
    ("open CREATE INDEX", open_create_index),
    ("reads and writes behind a waiting CREATE INDEX", queued_behind_ddl),
    ("a reader writes past a DROP waiting for it", reader_writes_past_queued_drop),
]


def run(dsn):
    records = []
    for name, scenario in SCENARIOS:
        with psycopg.connect(dsn, autocommit=True) as conn:
            for sql in SETUP:
                conn.execute(sql)
        records.append((name, scenario(dsn)))
    return records


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    runs = [run(dsn) for dsn in sys.argv[1:]]
    differences = 0
    for i, (name, first) in enumerate(runs[0]):
        others = [r[i][1] for r in runs[1:]]
        same = all(o == first for o in others)
        differences += not same
        print(("same     " if same else "DIFFERENT") + f" {name}")
        for dsn, record in zip(sys.argv[1:], [first] + others):
            print(f"    {dsn.split('@')[-1]}: {record}")
    print(f"{len(SCENARIOS) - differences} same, {differences} different")
    sys.exit(1 if differences else 0)


if __name__ == "__main__":
    main()
