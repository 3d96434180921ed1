#!/usr/bin/env python3
"""Hours of mixed traffic against a running tbserver (scripts/soak.sh), with
the server's resident memory, open descriptors and threads and the polite
clients' latency written to a CSV row every INTERVAL seconds.

Traffic: polite clients (each from its own loopback address) probing
positions of every source, lines, batches of 50 and short analyses at steady
rates; an abuser (127.0.0.2) sending batches of 256 and analyses back to
back, which the budget answers with 429s; SLOW connections that never finish
their head; a SIGHUP (table rescan) every RELOAD seconds.

    soak.py BASE_URL SERVER_PID CSV SECONDS INTERVAL RELOAD SLOW FENS_FILE...

Exits non-zero when a polite request got anything but 200 or the server died.
"""

import asyncio
import http.client
import json
import os
import signal
import sys
import threading
import time
import urllib.parse

base, pid, csv_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
seconds, interval, reload_s, slow = float(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7])
fens = [line.strip() for f in sys.argv[8:] for line in open(f) if line.strip()]
host, port = urllib.parse.urlsplit(base).hostname, urllib.parse.urlsplit(base).port
end = time.monotonic() + seconds
lock = threading.Lock()
window = {"latencies": [], "polite": 0, "errors": 0, "abuser_served": 0, "abuser_limited": 0, "slow_closed": 0}
totals = {"polite": 0, "errors": 0, "abuser_limited": 0, "abuser_served": 0}
error_samples = []


def record(**counts):
    with lock:
        for key, value in counts.items():
            if key == "latency":
                window["latencies"].append(value)
            else:
                window[key] += value


def connect(source):
    return http.client.HTTPConnection(host, port, timeout=60, source_address=(source, 0))


def request(conn, method, path, body=None):
    headers = {"content-type": "application/json"} if body else {}
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    response.read()
    return response.status


def polite(index, period_s, make):
    """One polite client: a request from `make(i)` every `period_s`."""
    source, conn, i = f"127.0.1.{index + 1}", None, index
    next_at = time.monotonic()
    while next_at < end:
        time.sleep(max(0.0, next_at - time.monotonic()))
        # After a slow answer, go on at the steady rate, never in a burst to
        # catch up (that would be a client over its budget).
        next_at = max(next_at + period_s, time.monotonic())
        method, path, body = make(i)
        i += 1
        started = time.monotonic()
        try:
            conn = conn or connect(source)
            status = request(conn, method, path, body)
        except (OSError, http.client.HTTPException) as e:
            status, conn = repr(e), None
        if status == 200:
            record(polite=1, latency=time.monotonic() - started)
        else:
            record(polite=1, errors=1)
            with lock:
                if len(error_samples) < 20:
                    error_samples.append(f"{method} {path[:80]}: {status}")


def probe(i):
    return "GET", "/api/v1/probe?fen=" + urllib.parse.quote(fens[i % len(fens)]), None


def standard(i):
    return "GET", "/standard?fen=" + urllib.parse.quote(fens[(i * 7) % len(fens)]), None


def mainline(i):
    return "GET", "/api/v1/mainline?fen=" + urllib.parse.quote(fens[(i * 3) % len(fens)]), None


def batch(i):
    return "POST", "/api/v1/probe", json.dumps({"fens": [fens[(i + k) % len(fens)] for k in range(50)]})


def analysis(i):
    fen = urllib.parse.quote(fens[(i * 5) % len(fens)])
    return "GET", f"/api/v1/analyse?fen={fen}&movetime_ms=500", None


def abuser(kind):
    conn = connect("127.0.0.2")
    body = json.dumps({"fens": [fens[k % len(fens)] for k in range(256)]})
    fen = urllib.parse.quote("4k3/8/8/8/8/8/PPP5/4K3 w - - 0 1")
    while time.monotonic() < end:
        try:
            if kind == "batch":
                status = request(conn, "POST", "/api/v1/probe", body)
            else:
                status = request(conn, "GET", f"/api/v1/analyse?fen={fen}&movetime_ms=2000")
        except (OSError, http.client.HTTPException):
            conn, status = connect("127.0.0.2"), None
        if status == 429:
            record(abuser_limited=1)
            time.sleep(0.05)  # misbehaving, but not a busy loop of the client's own CPU
        elif status == 200:
            record(abuser_served=1)


async def slow_heads():
    async def one():
        while time.monotonic() < end:
            try:
                reader, writer = await asyncio.open_connection(host, port)
                writer.write(b"GET /api/v1/probe?fen=8/8/8/4k3/8/8/8/KR6_w HTTP/1.1\r\nHost: x\r\n")
                await writer.drain()
                while await reader.read(1024):
                    pass
                writer.close()
                record(slow_closed=1)
            except OSError:
                await asyncio.sleep(1)
    await asyncio.gather(*(one() for _ in range(slow)))


def heap_mib():
    """From the server's metrics: the decoded blocks it holds (chesstb and
    built-in block caches, each bounded by its configured size: the part of
    its memory that grows with the positions asked until the caches are
    full), and the allocator's live and resident bytes (live flat while
    resident grows: freed memory not given back, not a leak)."""
    conn = http.client.HTTPConnection(host, port, timeout=60)
    conn.request("GET", "/prometheus")
    text = conn.getresponse().read().decode()
    conn.close()

    def total(name):
        return int(sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                       if line.startswith(name + " ") or line.startswith(name + "{"))) >> 20
    return (total("tbserver_block_cache_size_bytes"), total("tbserver_heap_allocated_bytes"),
            total("tbserver_heap_resident_bytes"))


def proc_status():
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.split()
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    mib = lambda key: int(fields[key][0]) // 1024
    return mib("VmRSS"), mib("RssAnon"), mib("RssFile"), fds, int(fields["Threads"][0])


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] * 1e3 if values else float("nan")


def main():
    clients = [(probe, 0.05)] * 6 + [(standard, 0.1)] * 2 + [(mainline, 1.0), (batch, 2.0), (analysis, 10.0)]
    threads = [threading.Thread(target=polite, args=(i, period, make), daemon=True) for i, (make, period) in enumerate(clients)]
    threads += [threading.Thread(target=abuser, args=(k,), daemon=True) for k in ("batch", "analysis")]
    threads.append(threading.Thread(target=lambda: asyncio.run(slow_heads()), daemon=True))
    for t in threads:
        t.start()
    started = time.monotonic()
    next_reload = started + reload_s
    with open(csv_path, "w") as csv:
        csv.write("minute,rss_mib,rss_anon_mib,rss_file_mib,heap_allocated_mib,heap_resident_mib,block_cache_mib,"
                  "fds,threads,polite_requests,polite_errors,polite_p50_ms,polite_p99_ms,"
                  "abuser_served,abuser_429,slow_heads_closed\n")
        n = 0
        while time.monotonic() < end:
            # Memory sampled every second and reported as the interval's
            # median (one snapshot may fall inside a search, whose tables
            # come and go), descriptors and threads as their maximum.
            row_end, samples = min(end, time.monotonic() + interval), []
            try:
                while True:
                    samples.append(proc_status())
                    if time.monotonic() >= row_end:
                        break
                    time.sleep(min(1.0, max(0.0, row_end - time.monotonic())))
                if time.monotonic() >= next_reload:
                    os.kill(pid, signal.SIGHUP)
                    next_reload += reload_s
                cached, allocated, resident = heap_mib()
            except (FileNotFoundError, ProcessLookupError, ConnectionError):
                print("server died", file=sys.stderr)
                sys.exit(1)
            columns = list(zip(*samples))
            rss, anon, mapped = (sorted(column)[len(column) // 2] for column in columns[:3])
            fds, nthreads = (max(column) for column in columns[3:])
            with lock:
                w = dict(window)
                window.update(latencies=[], polite=0, errors=0, abuser_served=0, abuser_limited=0, slow_closed=0)
            for key in totals:
                totals[key] += w[key]
            n += 1
            row = (f"{n * interval / 60:.1f},{rss},{anon},{mapped},{allocated},{resident},{cached},{fds},{nthreads},"
                   f"{w['polite']},{w['errors']},"
                   f"{percentile(w['latencies'], 0.5):.2f},{percentile(w['latencies'], 0.99):.2f},"
                   f"{w['abuser_served']},{w['abuser_limited']},{w['slow_closed']}")
            csv.write(row + "\n")
            csv.flush()
            print(row, flush=True)
    print(f"polite requests {totals['polite']}, errors {totals['errors']}; abuser served {totals['abuser_served']}, "
          f"429 {totals['abuser_limited']}")
    for sample in error_samples:
        print("error:", sample)
    sys.exit(1 if totals["errors"] else 0)


main()
