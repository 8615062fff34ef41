#!/usr/bin/python3
"""A small TPC-C driver for WattDB (or PostgreSQL): loads a W-warehouse database, runs the five
transactions (New-Order, Payment, Order-Status, Delivery, Stock-Level) in the specification's
mix from several client threads, retries serialization failures, and checks the
specification's consistency conditions 1-4 afterwards.

Money, rates and year-to-date amounts are NUMERIC with the specification's precisions (exact,
so the consistency sums must match exactly).

usage: tpcc.py --port P [--host H] [--user U] [--dbname D] [--warehouses 1] [--clients 4]
               [--transactions 400] [--skip-load] [--seed 7]
Exit status 0 only if every transaction ended (committed or the 1% New-Order rollback) and
every consistency condition holds. Prints throughput per transaction type.
"""
import argparse
import decimal
import io
import random
import sys
import threading
import time

import psycopg2
import psycopg2.errors

DISTRICTS = 10
CUSTOMERS = 3000      # per district
ITEMS = 100000
ORDERS = 3000         # per district; the last 900 are undelivered (in new_order)

SCHEMA = [
    "CREATE TABLE warehouse (w_id INT PRIMARY KEY, w_name VARCHAR(10), w_street_1 VARCHAR(20), w_city VARCHAR(20),"
    " w_state CHAR(2), w_zip CHAR(9), w_tax NUMERIC(4,4), w_ytd NUMERIC(12,2))",
    "CREATE TABLE district (d_w_id INT, d_id INT, d_name VARCHAR(10), d_street_1 VARCHAR(20), d_city VARCHAR(20),"
    " d_state CHAR(2), d_zip CHAR(9), d_tax NUMERIC(4,4), d_ytd NUMERIC(12,2), d_next_o_id INT,"
    " PRIMARY KEY (d_w_id, d_id))",
    "CREATE TABLE customer (c_w_id INT, c_d_id INT, c_id INT, c_first VARCHAR(16), c_middle CHAR(2),"
    " c_last VARCHAR(16), c_street_1 VARCHAR(20), c_city VARCHAR(20), c_state CHAR(2), c_zip CHAR(9),"
    " c_phone CHAR(16), c_since TIMESTAMP, c_credit CHAR(2), c_credit_lim NUMERIC(12,2),"
    " c_discount NUMERIC(4,4), c_balance NUMERIC(12,2), c_ytd_payment NUMERIC(12,2), c_payment_cnt INT, c_delivery_cnt INT, c_data VARCHAR(500),"
    " PRIMARY KEY (c_w_id, c_d_id, c_id))",
    "CREATE TABLE history (h_c_id INT, h_c_d_id INT, h_c_w_id INT, h_d_id INT, h_w_id INT, h_date TIMESTAMP,"
    " h_amount NUMERIC(6,2), h_data VARCHAR(24))",
    "CREATE TABLE orders (o_w_id INT, o_d_id INT, o_id INT, o_c_id INT, o_entry_d TIMESTAMP, o_carrier_id INT,"
    " o_ol_cnt INT, o_all_local INT, PRIMARY KEY (o_w_id, o_d_id, o_id))",
    "CREATE TABLE new_order (no_w_id INT, no_d_id INT, no_o_id INT, PRIMARY KEY (no_w_id, no_d_id, no_o_id))",
    "CREATE TABLE order_line (ol_w_id INT, ol_d_id INT, ol_o_id INT, ol_number INT, ol_i_id INT,"
    " ol_supply_w_id INT, ol_delivery_d TIMESTAMP, ol_quantity INT, ol_amount NUMERIC(6,2), ol_dist_info CHAR(24),"
    " PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))",
    "CREATE TABLE item (i_id INT PRIMARY KEY, i_im_id INT, i_name VARCHAR(24), i_price NUMERIC(5,2), i_data VARCHAR(50))",
    "CREATE TABLE stock (s_w_id INT, s_i_id INT, s_quantity INT, s_dist_01 CHAR(24), s_ytd NUMERIC(8,0),"
    " s_order_cnt INT, s_remote_cnt INT, s_data VARCHAR(50), PRIMARY KEY (s_w_id, s_i_id))",
]
TABLES = ["warehouse", "district", "customer", "history", "orders", "new_order", "order_line", "item", "stock"]
SYLLABLES = ["BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"]


def last_name(n):
    return SYLLABLES[n // 100] + SYLLABLES[(n // 10) % 10] + SYLLABLES[n % 10]


def nurand(rng, a, x, y, c=42):
    return (((rng.randint(0, a) | rng.randint(x, y)) + c) % (y - x + 1)) + x


def dec(units, places=2):
    """units * 10^-places as an exact decimal (cents by default)."""
    return decimal.Decimal(units).scaleb(-places)


def connect(args):
    return psycopg2.connect(host=args.host, port=args.port, user=args.user, dbname=args.dbname,
                            password=args.password, sslmode="disable")


def copy_rows(cur, table, rows):
    buf = io.StringIO()
    for r in rows:
        buf.write("\t".join("\\N" if v is None else str(v) for v in r) + "\n")
    buf.seek(0)
    cur.copy_expert(f"COPY {table} FROM STDIN", buf)


def load(args):
    rng = random.Random(args.seed)
    conn = connect(args)
    conn.autocommit = True
    cur = conn.cursor()
    for t in TABLES:
        cur.execute(f"DROP TABLE IF EXISTS {t}")
    for ddl in SCHEMA:
        cur.execute(ddl)
    now = "2026-01-01 00:00:00"
    t0 = time.time()
    copy_rows(cur, "item", ((i, rng.randint(1, 10000), f"item-{i}", dec(rng.randint(100, 10000)),
                             "ORIGINAL" if rng.random() < 0.1 else f"data-{i}") for i in range(1, ITEMS + 1)))
    for w in range(1, args.warehouses + 1):
        copy_rows(cur, "warehouse", [(w, f"w{w}", "street", "city", "ST", "123456789", dec(rng.randint(0, 2000), 4),
                                          dec(30000000))])
        copy_rows(cur, "stock", ((w, i, rng.randint(10, 100), f"dist-{i % 1000:04}".ljust(24), 0, 0, 0, f"s-{i}")
                                 for i in range(1, ITEMS + 1)))
        for d in range(1, DISTRICTS + 1):
            copy_rows(cur, "district", [(w, d, f"d{d}", "street", "city", "ST", "123456789",
                                         dec(rng.randint(0, 2000), 4), dec(3000000), ORDERS + 1)])
            customers, history = [], []
            for c in range(1, CUSTOMERS + 1):
                last = last_name(c - 1 if c <= 1000 else nurand(rng, 255, 0, 999))
                credit = "BC" if rng.random() < 0.1 else "GC"
                customers.append((w, d, c, f"first-{c}", "OE", last, "street", "city", "ST", "123456789",
                                  "0123456789012345", now, credit, dec(5000000), dec(rng.randint(0, 5000), 4), dec(-1000),
                                  dec(1000), 1, 0,
                                  "customer data"))
                history.append((c, d, w, d, w, now, dec(1000), "initial"))
            copy_rows(cur, "customer", customers)
            copy_rows(cur, "history", history)
            perm = list(range(1, CUSTOMERS + 1))
            rng.shuffle(perm)
            orders, lines, new_orders = [], [], []
            for o in range(1, ORDERS + 1):
                delivered = o <= ORDERS - 900
                cnt = rng.randint(5, 15)
                orders.append((w, d, o, perm[o - 1], now, rng.randint(1, 10) if delivered else None, cnt, 1))
                for n in range(1, cnt + 1):
                    lines.append((w, d, o, n, rng.randint(1, ITEMS), w, now if delivered else None, 5,
                                  dec(0 if delivered else rng.randint(1, 999999)), "dist-info".ljust(24)))
                if not delivered:
                    new_orders.append((w, d, o))
            copy_rows(cur, "orders", orders)
            copy_rows(cur, "order_line", lines)
            copy_rows(cur, "new_order", new_orders)
    cur.execute("VACUUM ANALYZE")
    conn.close()
    print(f"loaded {args.warehouses} warehouse(s) in {time.time() - t0:.1f} s", flush=True)


class Retry(Exception):
    pass


def customer_by_name_or_id(cur, rng, w, d):
    if rng.random() < 0.6:
        last = last_name(nurand(rng, 255, 0, 999))
        cur.execute("SELECT c_id FROM customer WHERE c_w_id = %s AND c_d_id = %s AND c_last = %s ORDER BY c_first",
                    (w, d, last))
        ids = [r[0] for r in cur.fetchall()]
        if ids:
            return ids[(len(ids) - 1) // 2]
    return nurand(rng, 1023, 1, CUSTOMERS)


def new_order(cur, rng, w, args):
    d, c = rng.randint(1, DISTRICTS), nurand(rng, 1023, 1, CUSTOMERS)
    items = sorted({nurand(rng, 8191, 1, ITEMS) for _ in range(rng.randint(5, 15))})
    rollback = rng.random() < 0.01
    if rollback:
        items[-1] = ITEMS + 1  # an unused item number: the transaction rolls back
    cur.execute("SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse"
                " WHERE w_id = %s AND c_w_id = w_id AND c_d_id = %s AND c_id = %s", (w, d, c))
    discount, _, _, w_tax = cur.fetchone()
    cur.execute("SELECT d_next_o_id, d_tax FROM district WHERE d_w_id = %s AND d_id = %s FOR UPDATE", (w, d))
    o_id, d_tax = cur.fetchone()
    cur.execute("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = %s AND d_id = %s", (w, d))
    cur.execute("INSERT INTO orders (o_w_id, o_d_id, o_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)"
                " VALUES (%s, %s, %s, %s, now(), NULL, %s, 1)", (w, d, o_id, c, len(items)))
    cur.execute("INSERT INTO new_order (no_w_id, no_d_id, no_o_id) VALUES (%s, %s, %s)", (w, d, o_id))
    for n, i in enumerate(items, 1):
        cur.execute("SELECT i_price, i_name, i_data FROM item WHERE i_id = %s", (i,))
        row = cur.fetchone()
        if row is None:
            return "rollback"
        price = row[0]
        qty = rng.randint(1, 10)
        cur.execute("SELECT s_quantity, s_data, s_dist_01 FROM stock WHERE s_w_id = %s AND s_i_id = %s FOR UPDATE",
                    (w, i))
        s_qty, _, dist = cur.fetchone()
        s_qty = s_qty - qty if s_qty - qty >= 10 else s_qty - qty + 91
        cur.execute("UPDATE stock SET s_quantity = %s, s_ytd = s_ytd + %s, s_order_cnt = s_order_cnt + 1"
                    " WHERE s_w_id = %s AND s_i_id = %s", (s_qty, qty, w, i))
        amount = (qty * price * (1 + w_tax + d_tax) * (1 - discount)).quantize(decimal.Decimal("0.01"))
        cur.execute("INSERT INTO order_line (ol_w_id, ol_d_id, ol_o_id, ol_number, ol_i_id, ol_supply_w_id,"
                    " ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) VALUES (%s, %s, %s, %s, %s, %s, NULL, %s, %s, %s)",
                    (w, d, o_id, n, i, w, qty, amount, dist))
    return "commit"


def payment(cur, rng, w, args):
    d = rng.randint(1, DISTRICTS)
    amount = dec(rng.randint(100, 500000))
    cur.execute("UPDATE warehouse SET w_ytd = w_ytd + %s WHERE w_id = %s", (amount, w))
    cur.execute("SELECT w_name, w_street_1, w_city FROM warehouse WHERE w_id = %s", (w,))
    cur.fetchone()
    cur.execute("UPDATE district SET d_ytd = d_ytd + %s WHERE d_w_id = %s AND d_id = %s", (amount, w, d))
    cur.execute("SELECT d_name, d_street_1, d_city FROM district WHERE d_w_id = %s AND d_id = %s", (w, d))
    cur.fetchone()
    c = customer_by_name_or_id(cur, rng, w, d)
    cur.execute("SELECT c_first, c_last, c_credit, c_balance FROM customer"
                " WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s FOR UPDATE", (w, d, c))
    _, _, credit, _ = cur.fetchone()
    cur.execute("UPDATE customer SET c_balance = c_balance - %s, c_ytd_payment = c_ytd_payment + %s,"
                " c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s",
                (amount, amount, w, d, c))
    if credit.strip() == "BC":
        cur.execute("UPDATE customer SET c_data = %s WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s",
                    (f"{c} {d} {w} {amount}", w, d, c))
    cur.execute("INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)"
                " VALUES (%s, %s, %s, %s, %s, now(), %s, %s)", (c, d, w, d, w, amount, "payment"))
    return "commit"


def order_status(cur, rng, w, args):
    d = rng.randint(1, DISTRICTS)
    c = customer_by_name_or_id(cur, rng, w, d)
    cur.execute("SELECT c_balance, c_first, c_last FROM customer WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s",
                (w, d, c))
    cur.fetchone()
    cur.execute("SELECT o_id, o_carrier_id, o_entry_d FROM orders WHERE o_w_id = %s AND o_d_id = %s AND o_c_id = %s"
                " AND o_id = (SELECT max(o_id) FROM orders WHERE o_w_id = %s AND o_d_id = %s AND o_c_id = %s)",
                (w, d, c, w, d, c))
    row = cur.fetchone()
    if row:
        cur.execute("SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line"
                    " WHERE ol_w_id = %s AND ol_d_id = %s AND ol_o_id = %s", (w, d, row[0]))
        cur.fetchall()
    return "commit"


def delivery(cur, rng, w, args):
    carrier = rng.randint(1, 10)
    for d in range(1, DISTRICTS + 1):
        cur.execute("SELECT min(no_o_id) FROM new_order WHERE no_w_id = %s AND no_d_id = %s", (w, d))
        o = cur.fetchone()[0]
        if o is None:
            continue
        cur.execute("DELETE FROM new_order WHERE no_w_id = %s AND no_d_id = %s AND no_o_id = %s", (w, d, o))
        cur.execute("SELECT o_c_id FROM orders WHERE o_w_id = %s AND o_d_id = %s AND o_id = %s", (w, d, o))
        c = cur.fetchone()[0]
        cur.execute("UPDATE orders SET o_carrier_id = %s WHERE o_w_id = %s AND o_d_id = %s AND o_id = %s",
                    (carrier, w, d, o))
        cur.execute("UPDATE order_line SET ol_delivery_d = now() WHERE ol_w_id = %s AND ol_d_id = %s AND ol_o_id = %s",
                    (w, d, o))
        cur.execute("SELECT sum(ol_amount) FROM order_line WHERE ol_w_id = %s AND ol_d_id = %s AND ol_o_id = %s",
                    (w, d, o))
        total = cur.fetchone()[0]
        cur.execute("UPDATE customer SET c_balance = c_balance + %s, c_delivery_cnt = c_delivery_cnt + 1"
                    " WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s", (total, w, d, c))
    return "commit"


def stock_level(cur, rng, w, args):
    d = rng.randint(1, DISTRICTS)
    threshold = rng.randint(10, 20)
    cur.execute("SELECT d_next_o_id FROM district WHERE d_w_id = %s AND d_id = %s", (w, d))
    o = cur.fetchone()[0]
    cur.execute("SELECT count(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = %s AND ol_d_id = %s"
                " AND ol_o_id < %s AND ol_o_id >= %s AND s_w_id = %s AND s_i_id = ol_i_id AND s_quantity < %s",
                (w, d, o, o - 20, w, threshold))
    cur.fetchone()
    return "commit"


MIX = [(new_order, 45), (payment, 43), (order_status, 4), (delivery, 4), (stock_level, 4)]


def run(args):
    stats = {f.__name__: [0, 0, 0.0] for f, _ in MIX}  # committed, retries, seconds
    failures = []
    lock = threading.Lock()
    per_client = args.transactions // args.clients

    def client(k):
        rng = random.Random(args.seed * 1000 + k)
        conn = connect(args)
        cur = conn.cursor()
        for _ in range(per_client):
            f = rng.choices([m[0] for m in MIX], weights=[m[1] for m in MIX])[0]
            w = rng.randint(1, args.warehouses)
            t0 = time.time()
            for attempt in range(100):
                try:
                    outcome = f(cur, rng, w, args)
                    if outcome == "rollback":
                        conn.rollback()
                    else:
                        conn.commit()
                    break
                except psycopg2.errors.SerializationFailure:
                    conn.rollback()
                    with lock:
                        stats[f.__name__][1] += 1
                except Exception as e:  # any other error fails the run
                    conn.rollback()
                    with lock:
                        failures.append(f"{f.__name__}: {type(e).__name__}: {e}".strip())
                    break
            else:
                with lock:
                    failures.append(f"{f.__name__}: gave up after 100 serialization failures")
            with lock:
                stats[f.__name__][0] += 1
                stats[f.__name__][2] += time.time() - t0
        conn.close()

    t0 = time.time()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.time() - t0
    total = sum(v[0] for v in stats.values())
    print(f"{total} transactions by {args.clients} clients in {elapsed:.1f} s: {total / elapsed:.1f} tx/s,"
          f" {stats['new_order'][0] / elapsed * 60:.0f} New-Order/min")
    for name, (n, retries, secs) in stats.items():
        print(f"  {name:<13} {n:>6} done  {retries:>5} retried after 40001  {1000 * secs / max(n, 1):8.1f} ms avg")
    return failures


def check(args):
    """TPC-C clause 3.3.2 consistency conditions 1-4."""
    conn = connect(args)
    cur = conn.cursor()
    problems = []
    q = lambda sql, *p: (cur.execute(sql, p), cur.fetchall())[1]
    for (w, w_ytd) in q("SELECT w_id, w_ytd FROM warehouse"):
        d_sum = q("SELECT sum(d_ytd) FROM district WHERE d_w_id = %s", w)[0][0]
        if w_ytd - dec(30000000) != d_sum - dec(3000000) * DISTRICTS:
            problems.append(f"1: warehouse {w}: w_ytd {w_ytd} does not match sum(d_ytd) {d_sum}")
        for (d, next_o) in q("SELECT d_id, d_next_o_id FROM district WHERE d_w_id = %s", w):
            max_o = q("SELECT max(o_id) FROM orders WHERE o_w_id = %s AND o_d_id = %s", w, d)[0][0]
            max_no, min_no, cnt_no = q("SELECT max(no_o_id), min(no_o_id), count(*) FROM new_order"
                                       " WHERE no_w_id = %s AND no_d_id = %s", w, d)[0]
            if next_o - 1 != max_o or (max_no is not None and max_no != max_o):
                problems.append(f"2: district {w}/{d}: d_next_o_id-1={next_o - 1} max(o_id)={max_o} max(no_o_id)={max_no}")
            if max_no is not None and cnt_no != max_no - min_no + 1:
                problems.append(f"3: district {w}/{d}: {cnt_no} new orders between {min_no} and {max_no}")
            ol_cnt = q("SELECT sum(o_ol_cnt) FROM orders WHERE o_w_id = %s AND o_d_id = %s", w, d)[0][0]
            lines = q("SELECT count(*) FROM order_line WHERE ol_w_id = %s AND ol_d_id = %s", w, d)[0][0]
            if ol_cnt != lines:
                problems.append(f"4: district {w}/{d}: sum(o_ol_cnt)={ol_cnt} but {lines} order lines")
    conn.close()
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--user", default="wattdb")
    ap.add_argument("--password", default=None)
    ap.add_argument("--dbname", default="wattdb")
    ap.add_argument("--warehouses", type=int, default=1)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--transactions", type=int, default=400)
    ap.add_argument("--skip-load", action="store_true")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    if not args.skip_load:
        load(args)
    problems = check(args)
    if problems:
        print("inconsistent after loading:\n  " + "\n  ".join(problems))
        return 1
    failures = run(args)
    problems = check(args)
    for f in failures:
        print("FAILED " + f)
    for p in problems:
        print("INCONSISTENT " + p)
    print("consistency conditions 1-4: " + ("hold" if not problems else "VIOLATED"))
    return 1 if failures or problems else 0


if __name__ == "__main__":
    sys.exit(main())
