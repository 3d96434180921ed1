#!/usr/bin/env python3
"""Slow-head clients against a running tbserver (scripts/load-slow-clients.sh).

Measures a polite client (one keep-alive connection, probes in a row) alone,
then beside SLOW connections that each send a request line and one header but
never the blank line that ends the head, reopened as soon as the server
closes them. Prints the polite client's p50/p99 both ways, how long the
server took to close the slow connections, and how many polite requests
failed. The polite client runs in a process of its own: as a thread beside
the slow connections' event loop it would wait for that loop's turn (one
Python thread runs at a time), and its latencies would be the client's.
The slow connections run at the lowest CPU priority (nice 19).
Exits non-zero when a slow connection outlived the head limit by more
than a second, a polite request failed, or the polite p99 beside them is over
twice its p99 alone.

    load-slow-clients.py BASE_URL FENS_FILE SLOW HEAD_LIMIT_S SECONDS [CHECK_P99]

With CHECK_P99=0 (more slow connections than the server has descriptors:
they are closed to make room as fast as they reconnect) the p99 is printed,
not checked: the polite client must only be served.
"""

import asyncio
import http.client
import statistics
import sys
import multiprocessing
import os
import time
import urllib.parse

base, fens_file, slow, head_limit_s, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
check_p99 = len(sys.argv) < 7 or sys.argv[6] != "0"
host, port = urllib.parse.urlsplit(base).hostname, urllib.parse.urlsplit(base).port
fens = [line.strip() for line in open(fens_file) if line.strip()]


def polite(duration_s, out):
    """Probes in a row on one kept-alive connection (a new one if it is closed)."""
    latencies, failures, i = [], 0, 0
    conn = http.client.HTTPConnection(host, port, timeout=10)
    end = time.monotonic() + duration_s
    while time.monotonic() < end:
        path = "/api/v1/probe?fen=" + urllib.parse.quote(fens[i % len(fens)])
        i += 1
        started = time.monotonic()
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                failures += 1
            else:
                latencies.append(time.monotonic() - started)
        except (OSError, http.client.HTTPException):
            failures += 1
            conn.close()
            conn = http.client.HTTPConnection(host, port, timeout=10)
        time.sleep(0.002)
    out.update(latencies=latencies, failures=failures)


def polite_process(delay_s, duration_s, queue):
    """`polite` after `delay_s`, its results sent back through `queue`."""
    time.sleep(delay_s)
    out = {}
    polite(duration_s, out)
    queue.put(out)


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] if values else float("nan")


async def slow_connection(stop, lifetimes, refused):
    """Opens slow heads one after another until `stop`; records how long each lived."""
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError:
            refused.append(1)
            await asyncio.sleep(0.5)
            continue
        opened = time.monotonic()
        writer.write(b"GET /api/v1/probe?fen=8/8/8/4k3/8/8/8/KR6_w HTTP/1.1\r\nHost: x\r\n")
        try:
            await writer.drain()
            while await reader.read(1024):
                pass
        except OSError:
            pass
        if not stop.is_set():
            lifetimes.append(time.monotonic() - opened)
        writer.close()


async def attack(duration_s, lifetimes, refused):
    stop = asyncio.Event()
    tasks = [asyncio.create_task(slow_connection(stop, lifetimes, refused)) for _ in range(slow)]
    await asyncio.sleep(duration_s)
    stop.set()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def main():
    alone = {}
    polite(seconds, alone)
    lifetimes, refused = [], []
    # The slow connections first, then the polite client beside them.
    delay_s = min(3.0, seconds / 4)
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    process = context.Process(target=polite_process, args=(delay_s, seconds, queue))
    process.start()
    # The slow connections at the lowest priority: on a machine they share
    # with the server, they would otherwise take its cores, and the polite
    # client would measure the load generator rather than the server.
    os.setpriority(os.PRIO_PROCESS, 0, 19)
    asyncio.run(attack(seconds + delay_s, lifetimes, refused))
    beside = queue.get()
    process.join()
    a99, b99 = percentile(alone["latencies"], 0.99), percentile(beside["latencies"], 0.99)
    print(f"polite alone:  {len(alone['latencies'])} probes, p50 {statistics.median(alone['latencies'])*1e3:.2f} ms, "
          f"p99 {a99*1e3:.2f} ms, {alone['failures']} failed")
    print(f"polite beside {slow} slow heads: {len(beside['latencies'])} probes, "
          f"p50 {statistics.median(beside['latencies'])*1e3:.2f} ms, p99 {b99*1e3:.2f} ms, {beside['failures']} failed")
    print(f"slow heads closed by the server: {len(lifetimes)}, lifetime p50 {percentile(lifetimes, 0.5):.2f} s, "
          f"max {max(lifetimes, default=float('nan')):.2f} s (head limit {head_limit_s} s); "
          f"connects refused: {len(refused)}")
    ok = True
    if lifetimes and max(lifetimes) > head_limit_s + 1.0:
        print("FAIL: a slow head outlived the head limit", file=sys.stderr)
        ok = False
    if beside["failures"] or alone["failures"]:
        print("FAIL: polite requests failed", file=sys.stderr)
        ok = False
    if check_p99 and b99 > 2 * a99:
        print("FAIL: polite p99 beside slow heads is over twice its p99 alone", file=sys.stderr)
        ok = False
    sys.exit(0 if ok else 1)


main()
