#!/usr/bin/env python3
"""Peak memory of `toolscore serve` under slow, large uploads.

Starts the server, opens N real HTTP connections (default 200) that each
declare a B MiB OTLP/HTTP body (default 15), send all of it but the last
byte, and hold it back. The server may hold at most --max-inflight bytes of
bodies; the rest must be refused (503) rather than buffered. Once every
client is either holding or refused, the server's peak resident memory
(VmHWM in /proc/PID/status) is read and compared with the budget + 100 MB.

Everything listens on 127.0.0.1; the run is bounded in time and stops the
server itself. Exit 0 when the peak is within the target, 1 when not.

Usage: scripts/inflight-rss.py [--bin target/release/toolscore] [--clients 200]
       [--body-mib 15] [--max-inflight-mib 128] [--chunked]
"""

import argparse
import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEADLINE_S = 180
TARGET_SLACK = 100 * 1000 * 1000


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/{pid}/status")


def queued_to(port):
    """Bytes waiting in the receive queues of the sockets on local `port`."""
    total = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if int(fields[1].rsplit(":", 1)[1], 16) == port:
                        total += int(fields[4].split(":")[1], 16)
        except FileNotFoundError:
            pass
    return total


def metric(admin, name):
    with urllib.request.urlopen(f"http://{admin}/metrics", timeout=10) as r:
        text = r.read().decode()
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/debug/toolscore"))
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--body-mib", type=int, default=15)
    ap.add_argument("--max-inflight-mib", type=int, default=128)
    ap.add_argument("--chunked", action="store_true",
                    help="chunked bodies (no Content-Length), the last chunk held back")
    args = ap.parse_args()

    server = subprocess.Popen(
        [args.bin, "serve", "--grpc-endpoint", "off",
         "--http-endpoint", "127.0.0.1:0", "--admin-endpoint", "127.0.0.1:0",
         "--max-inflight", f"{args.max_inflight_mib}MiB",
         # The clients hold their last byte for the whole measurement.
         "--request-timeout", "300s", "--header-timeout", "300s",
         "--max-connections", str(args.clients + 64), "--quiet"],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    listening = threading.Event()
    found = {}
    log = []

    def read_log():
        for line in server.stderr:
            log.append(line)
            if "Listening." in line and not listening.is_set():
                found["http"] = re.search(r"http=(\S+)", line).group(1)
                found["admin"] = re.search(r"admin=(\S+)", line).group(1)
                listening.set()

    threading.Thread(target=read_log, daemon=True).start()
    try:
        if not listening.wait(30):
            sys.exit("serve did not log `Listening.` within 30 s:\n" + "".join(log))
        return measure(args, server.pid, found["http"], found["admin"])
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()


def measure(args, pid, http, admin):
    host, port = http.rsplit(":", 1)
    body = args.body_mib << 20
    base_rss = status_kib(pid, "VmRSS")
    head = (f"POST /v1/traces HTTP/1.1\r\nHost: {http}\r\n"
            "Content-Type: application/x-protobuf\r\n").encode()
    if args.chunked:
        # Chunked framing: the held-back part is the final `0` chunk.
        piece = 256 << 10
        framed = f"{piece:x}\r\n".encode() + b"\0" * piece + b"\r\n"
        payload = head + b"Transfer-Encoding: chunked\r\n\r\n" + framed * (body // piece)
    else:
        payload = head + f"Content-Length: {body}\r\n\r\n".encode() + b"\0" * (body - 1)
    payload = memoryview(payload)
    sel = selectors.DefaultSelector()
    # Per client: how much of the payload it has sent.
    sent = {}
    socks = []
    for _ in range(args.clients):
        s = socket.create_connection((host, int(port)))
        s.setblocking(False)
        socks.append(s)
        sent[s] = 0
        sel.register(s, selectors.EVENT_WRITE)
    refused = set()
    start = time.monotonic()
    while sent:
        if time.monotonic() - start > DEADLINE_S:
            sys.exit(f"clients not done within {DEADLINE_S} s: {len(sent)} still sending")
        for key, _ in sel.select(timeout=1):
            s = key.fileobj
            try:
                n = s.send(payload[sent[s]:sent[s] + (256 << 10)])
            except BlockingIOError:
                continue
            except OSError:
                # The server answered (503) and closed: refused.
                refused.add(s)
                sel.unregister(s)
                del sent[s]
                continue
            sent[s] += n
            if sent[s] == len(payload):
                sel.unregister(s)
                del sent[s]
    # Sent is not yet read: wait until the server has taken what the
    # kernel holds for it (its sockets' receive queues are empty).
    while time.monotonic() - start < DEADLINE_S and queued_to(int(port)) > 0:
        time.sleep(0.1)
    # A refusal whose connection is still open: a 503 waiting to be read,
    # or the connection closed after it.
    for s in socks:
        try:
            data = s.recv(64)
            if data.startswith(b"HTTP/1.1 503") or data == b"":
                refused.add(s)
        except BlockingIOError:
            pass
        except OSError:
            refused.add(s)
    held = len(socks) - len(refused)
    refused = len(refused)
    elapsed = time.monotonic() - start
    inflight = metric(admin, "toolscore_inflight_bytes") or 0
    peak = status_kib(pid, "VmHWM") * 1024
    rss = status_kib(pid, "VmRSS") * 1024
    budget = args.max_inflight_mib << 20
    target = budget + TARGET_SLACK
    framing = "chunked, final chunk" if args.chunked else "Content-Length, last byte"
    print(f"clients: {args.clients} x {args.body_mib} MiB ({framing} held back); "
          f"sent in {elapsed:.1f} s")
    print(f"holding (all but the last byte taken): {held}; refused (503): {refused}")
    print(f"server in-flight bytes now: {inflight / 2**20:.1f} MiB "
          f"(budget --max-inflight {args.max_inflight_mib} MiB)")
    print(f"server RSS at start: {base_rss / 1024:.1f} MiB; now: {rss / 2**20:.1f} MiB; "
          f"peak (VmHWM): {peak / 2**20:.1f} MiB")
    print(f"target: peak <= budget + 100 MB = {target / 2**20:.1f} MiB: "
          + ("OK" if peak <= target else "OVER"))
    for s in socks:
        s.close()
    return 0 if peak <= target else 1


if __name__ == "__main__":
    sys.exit(main())
