#!/usr/bin/env python3
"""Polite clients beside an abuser, against a running tbserver whose budget
applies to loopback clients (scripts/load-fairness.sh).

POLITE clients, each from its own loopback address (127.0.1.N), probe one
position every 1/RATE s on a kept-alive connection; first alone, then beside
an abuser (127.0.0.2) that sends batches of 256 positions and analyses as
fast as it can from several connections, never waiting. Prints the polite
p50/p99 both ways, their refusals, and what the abuser got; exits non-zero
when a polite request was refused or failed, the abuser was never refused,
the polite p99 beside it is over twice the p99 alone, or a 429's Retry-After,
honoured, does not get the abuser served.

    load-fairness.py BASE_URL FENS_FILE POLITE RATE SECONDS
"""

import http.client
import json
import multiprocessing
import statistics
import sys
import threading
import time
import urllib.parse

base, fens_file = sys.argv[1], sys.argv[2]
polite_n, rate, seconds = int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
host, port = urllib.parse.urlsplit(base).hostname, urllib.parse.urlsplit(base).port
fens = [line.strip() for line in open(fens_file) if line.strip()]


def connect(source):
    return http.client.HTTPConnection(host, port, timeout=30, source_address=(source, 0))


def polite(index, duration_s, out):
    conn, source = None, f"127.0.1.{index + 1}"
    latencies, refused, failed = [], 0, 0
    period, next_at = 1.0 / rate, time.monotonic()
    end = next_at + duration_s
    i = index
    while next_at < end:
        time.sleep(max(0.0, next_at - time.monotonic()))
        next_at += period
        path = "/api/v1/probe?fen=" + urllib.parse.quote(fens[i % len(fens)])
        i += 1
        started = time.monotonic()
        try:
            conn = conn or connect(source)
            conn.request("GET", path)
            response = conn.getresponse()
            response.read()
            if response.status == 200:
                latencies.append(time.monotonic() - started)
            elif response.status == 429:
                refused += 1
            else:
                failed += 1
        except (OSError, http.client.HTTPException):
            failed += 1
            conn = None
    out[index] = (latencies, refused, failed)


def run_polite(duration_s):
    out = {}
    threads = [threading.Thread(target=polite, args=(i, duration_s, out)) for i in range(polite_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    latencies = [x for v in out.values() for x in v[0]]
    return latencies, sum(v[1] for v in out.values()), sum(v[2] for v in out.values())


def abuse(kind, duration_s, counts):
    conn = connect("127.0.0.2")
    batch = json.dumps({"fens": [fens[i % len(fens)] for i in range(256)]})
    end = time.monotonic() + duration_s
    served = limited = other = 0
    while time.monotonic() < end:
        try:
            if kind == "batch":
                conn.request("POST", "/api/v1/probe", body=batch, headers={"content-type": "application/json"})
            else:
                fen = urllib.parse.quote("4k3/8/8/8/8/8/PPP5/4K3 w - - 0 1")
                conn.request("GET", f"/api/v1/analyse?fen={fen}&movetime_ms=2000")
            response = conn.getresponse()
            response.read()
            if response.status == 200:
                served += 1
            elif response.status == 429:
                limited += 1
            else:
                other += 1
        except (OSError, http.client.HTTPException):
            other += 1
            conn = connect("127.0.0.2")
    counts.put((kind, served, limited, other))


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] if values else float("nan")


def honours_retry_after():
    """A 429's Retry-After, waited out, gets the same batch served."""
    conn = connect("127.0.0.2")
    batch = json.dumps({"fens": [fens[i % len(fens)] for i in range(256)]})
    for _ in range(200):
        conn.request("POST", "/api/v1/probe", body=batch, headers={"content-type": "application/json"})
        response = conn.getresponse()
        response.read()
        if response.status == 429:
            retry = int(response.getheader("retry-after"))
            print(f"abuser's 429: Retry-After {retry}, RateLimit-Policy {response.getheader('ratelimit-policy')}, "
                  f"RateLimit {response.getheader('ratelimit')}")
            time.sleep(retry)
            conn.request("POST", "/api/v1/probe", body=batch, headers={"content-type": "application/json"})
            response = conn.getresponse()
            response.read()
            print(f"after waiting {retry} s: {response.status}")
            return response.status == 200
    return False


def main():
    alone, alone_refused, alone_failed = run_polite(seconds)
    counts = multiprocessing.Queue()
    kinds = ["batch", "batch", "analysis", "analysis"]
    abusers = [multiprocessing.Process(target=abuse, args=(k, seconds + 2, counts)) for k in kinds]
    for p in abusers:
        p.start()
    time.sleep(1)
    beside, beside_refused, beside_failed = run_polite(seconds)
    for p in abusers:
        p.join()
    got = [counts.get() for _ in abusers]
    a99, b99 = percentile(alone, 0.99), percentile(beside, 0.99)
    print(f"{polite_n} polite clients at {rate}/s alone: {len(alone)} probes, p50 {statistics.median(alone)*1e3:.2f} ms, "
          f"p99 {a99*1e3:.2f} ms, refused {alone_refused}, failed {alone_failed}")
    print(f"beside the abuser: {len(beside)} probes, p50 {statistics.median(beside)*1e3:.2f} ms, "
          f"p99 {b99*1e3:.2f} ms, refused {beside_refused}, failed {beside_failed}")
    for kind in ("batch", "analysis"):
        s = [g for g in got if g[0] == kind]
        print(f"abuser {kind}: served {sum(g[1] for g in s)}, refused (429) {sum(g[2] for g in s)}, other {sum(g[3] for g in s)}")
    time.sleep(1)
    honoured = honours_retry_after()
    ok = True
    if alone_refused or beside_refused or alone_failed or beside_failed:
        print("FAIL: polite requests refused or failed", file=sys.stderr)
        ok = False
    if not any(g[2] for g in got):
        print("FAIL: the abuser was never refused", file=sys.stderr)
        ok = False
    if b99 > 2 * a99:
        print("FAIL: polite p99 beside the abuser is over twice its p99 alone", file=sys.stderr)
        ok = False
    if not honoured:
        print("FAIL: Retry-After honoured, still refused", file=sys.stderr)
        ok = False
    sys.exit(0 if ok else 1)


main()
