#!/usr/bin/env python3
"""Latency of each TPC-C statement, one at a time, against servers holding go-tpc's data.

TPC-C's throughput mixes five transactions of several statements each, so a slow
statement hides among the others. This times every statement shape go-tpc's PostgreSQL
driver sends, as server-side prepared statements (as go-tpc prepares them), on one
connection with nothing else running, and prints the median and 95th percentile of each
per server, with pmdb's median over the other's.

Load the data first with go-tpc (`go-tpc tpcc prepare ... --warehouses W`) on every
server, then:

    python3 scripts/bench/tpcc_statements.py --warehouses W \\
        pmdb=postgresql://postgres@127.0.0.1:55432/pmdb \\
        postgres=postgresql://postgres@127.0.0.1:55433/tpcc

Statements that change rows run inside a block that is rolled back, so the data stays as
loaded and every server sees the same rows. Needs psycopg 3 (pip install psycopg[binary]).
"""

import argparse
import random
import statistics
import sys
import time

import psycopg

SYLLABLES = ["BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"]


def last_name(n):
    """TPC-C's customer last name for n in 0..999 (clause 4.3.2.3)."""
    return "".join(SYLLABLES[int(d)] for d in f"{n:03d}")


def statements(warehouses, rng):
    """(name, writes, SQL, a function giving fresh parameters) for each statement shape."""
    w = lambda: rng.randint(1, warehouses)  # noqa: E731
    d = lambda: rng.randint(1, 10)  # noqa: E731
    c = lambda: rng.randint(1, 3000)  # noqa: E731
    item = lambda: rng.randint(1, 100000)  # noqa: E731
    # Orders 1..2100 of each district are delivered, 2101..3000 are still new.
    delivered = lambda: rng.randint(1, 2100)  # noqa: E731
    ten = ",".join(["(%s,%s,%s)"] * 10)

    def triples():
        wid = w()
        return [v for dist in range(1, 11) for v in (wid, dist, delivered())]

    def stock_pairs():
        wid = w()
        return [v for _ in range(10) for v in (wid, item())]

    return [
        ("new-order: customer and warehouse", False,
         "SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse "
         "WHERE w_id = %s AND c_w_id = w_id AND c_d_id = %s AND c_id = %s",
         lambda: [w(), d(), c()]),
        ("new-order: district FOR UPDATE", True,
         "SELECT d_next_o_id, d_tax FROM district WHERE d_id = %s AND d_w_id = %s FOR UPDATE",
         lambda: [d(), w()]),
        ("new-order: district update", True,
         "UPDATE district SET d_next_o_id = %s + 1 WHERE d_id = %s AND d_w_id = %s",
         lambda: [3001, d(), w()]),
        ("new-order: items IN list", False,
         "SELECT i_price, i_name, i_data, i_id FROM item WHERE i_id IN ("
         + ",".join(["%s"] * 10) + ")",
         lambda: [item() for _ in range(10)]),
        ("new-order: stock row IN list FOR UPDATE", True,
         "SELECT s_i_id, s_quantity, s_data, s_dist_01, s_dist_02, s_dist_03, s_dist_04, "
         "s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10 FROM stock "
         "WHERE (s_w_id, s_i_id) IN (" + ",".join(["(%s,%s)"] * 10) + ") FOR UPDATE",
         stock_pairs),
        ("new-order: stock update", True,
         "UPDATE stock SET s_quantity = %s, s_ytd = s_ytd + %s, s_order_cnt = s_order_cnt + 1, "
         "s_remote_cnt = s_remote_cnt + %s WHERE s_i_id = %s AND s_w_id = %s",
         lambda: [50, 5, 0, item(), w()]),
        ("new-order: order insert", True,
         "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local) "
         "VALUES (%s, %s, %s, %s, now(), 10, 1)",
         lambda: [rng.randint(10**6, 10**7), d(), w(), c()]),
        ("payment: warehouse update", True,
         "UPDATE warehouse SET w_ytd = w_ytd + %s WHERE w_id = %s",
         lambda: [12.5, w()]),
        ("payment: customers by last name", False,
         "SELECT c_id FROM customer WHERE c_w_id = %s AND c_d_id = %s AND c_last = %s "
         "ORDER BY c_first",
         lambda: [w(), d(), last_name(rng.randint(0, 999))]),
        ("order-status: count by last name", False,
         "SELECT count(c_id) namecnt FROM customer WHERE c_w_id = %s AND c_d_id = %s "
         "AND c_last = %s",
         lambda: [w(), d(), last_name(rng.randint(0, 999))]),
        ("payment: customer FOR UPDATE", True,
         "SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, "
         "c_phone, c_credit, c_credit_lim, c_discount, c_balance, c_since FROM customer "
         "WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s FOR UPDATE",
         lambda: [w(), d(), c()]),
        ("payment: customer update", True,
         "UPDATE customer SET c_balance = c_balance - %s, c_ytd_payment = c_ytd_payment + %s, "
         "c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s",
         lambda: [12.5, 12.5, w(), d(), c()]),
        ("payment: history insert", True,
         "INSERT INTO history (h_c_d_id, h_c_w_id, h_c_id, h_d_id, h_w_id, h_date, h_amount, "
         "h_data) VALUES (%s, %s, %s, %s, %s, now(), %s, %s)",
         lambda: [d(), w(), c(), d(), w(), 12.5, "payment"]),
        ("order-status: latest order of a customer", False,
         "SELECT o_id, o_carrier_id, o_entry_d FROM orders WHERE o_w_id = %s AND o_d_id = %s "
         "AND o_c_id = %s ORDER BY o_id DESC LIMIT 1",
         lambda: [w(), d(), c()]),
        ("order-status: order lines", False,
         "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line "
         "WHERE ol_w_id = %s AND ol_d_id = %s AND ol_o_id = %s",
         lambda: [w(), d(), delivered()]),
        ("delivery: oldest new order FOR UPDATE", True,
         "SELECT no_o_id FROM new_order WHERE no_w_id = %s AND no_d_id = %s "
         "ORDER BY no_o_id ASC LIMIT 1 FOR UPDATE",
         lambda: [w(), d()]),
        ("delivery: order lines' sums", False,
         "SELECT ol_d_id, SUM(ol_amount) FROM order_line WHERE (ol_w_id, ol_d_id, ol_o_id) IN ("
         + ten + ") GROUP BY ol_d_id",
         triples),
        ("delivery: order lines update", True,
         "UPDATE order_line SET ol_delivery_d = now() WHERE (ol_w_id, ol_d_id, ol_o_id) IN ("
         + ten + ")",
         triples),
        ("stock-level: join", False,
         "SELECT /*+ TIDB_INLJ(order_line,stock) */ COUNT(DISTINCT (s_i_id)) stock_count "
         "FROM order_line, stock "
         "WHERE ol_w_id = %s AND ol_d_id = %s AND ol_o_id < %s AND ol_o_id >= %s - 20 "
         "AND s_w_id = %s AND s_i_id = ol_i_id AND s_quantity < %s",
         lambda: (lambda wid: [wid, d(), 3001, 3001, wid, rng.randint(10, 20)])(w())),
    ]


def time_statement(conn, sql, writes, params, runs):
    """Milliseconds of each of `runs` executions of `sql`, prepared on the server."""
    out = []
    with conn.cursor() as cur:
        for i in range(runs + 5):
            args = params()
            if writes:
                cur.execute("BEGIN")
            start = time.perf_counter()
            cur.execute(sql, args, prepare=True)
            if cur.description is not None:
                cur.fetchall()
            elapsed = (time.perf_counter() - start) * 1e3
            if writes:
                cur.execute("ROLLBACK")
            if i >= 5:  # the first runs prepare the statement
                out.append(elapsed)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("servers", nargs="+", help="NAME=postgresql://... (the first is pmdb)")
    ap.add_argument("--warehouses", type=int, default=1)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    results = {}
    names = []
    for spec in a.servers:
        name, _, url = spec.partition("=")
        names.append(name)
        rng = random.Random(a.seed)
        with psycopg.connect(url, autocommit=True) as conn:
            for label, writes, sql, params in statements(a.warehouses, rng):
                ms = time_statement(conn, sql, writes, params, a.runs)
                ms.sort()
                results[(name, label)] = (statistics.median(ms), ms[int(len(ms) * 0.95) - 1])
                print(f"{name:<10} {label:<44} p50 {results[(name, label)][0]:8.3f} ms",
                      file=sys.stderr)
    head = " | ".join(f"{n} p50 / p95 ms" for n in names)
    print(f"| statement | {head} |" + (f" {names[0]} ÷ {names[1]} (p50) |" if len(names) > 1 else ""))
    print("|---|" + "---:|" * (len(names) + (1 if len(names) > 1 else 0)))
    for label, *_ in statements(a.warehouses, random.Random(0)):
        cells = [results[(n, label)] for n in names]
        row = " | ".join(f"{p50:.2f} / {p95:.2f}" for p50, p95 in cells)
        ratio = f" {cells[0][0] / cells[1][0]:.1f}x |" if len(names) > 1 else ""
        print(f"| {label} | {row} |{ratio}")


if __name__ == "__main__":
    main()
