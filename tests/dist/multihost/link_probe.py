#!/usr/bin/env python3
"""link_probe.py — measures the link between the two simulated hosts (no ping here).

  link_probe.py echo PORT SECONDS [READY]  UDP echo server, ends after SECONDS
  link_probe.py ping HOST PORT COUNT GAP [WAIT]
                                           COUNT datagrams GAP s apart, each waited for up to WAIT s
                                           (0.25); prints {"sent", "received", "rtt_min_ms",
                                           "rtt_median_ms"}
  link_probe.py sink PORT SECONDS [READY]  TCP server: reads one connection to its end
The servers create the file READY once they are bound, so a client started after it appears
finds them listening, however long Python took to start on a loaded machine.
  link_probe.py stream HOST PORT MIB       sends MIB MiB over TCP; prints {"mbit_per_s"}
Every wait is bounded (socket timeouts and the SECONDS lifetimes).
"""
import json
import socket
import statistics
import sys
import time


def announce(ready):
    if ready:
        open(ready, "w").close()


def echo(port, seconds, ready=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    announce(ready)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        s.settimeout(max(0.01, end - time.monotonic()))
        try:
            data, peer = s.recvfrom(2048)
        except socket.timeout:
            break
        s.sendto(data, peer)


def ping(host, port, count, gap, wait=0.25):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1.0)
    rtts = []
    for i in range(count):
        payload = i.to_bytes(4, "big") + bytes(60)
        t0 = time.monotonic()
        s.sendto(payload, (host, port))
        deadline = t0 + wait
        while True:
            s.settimeout(max(0.001, deadline - time.monotonic()))
            try:
                data, _ = s.recvfrom(2048)
            except socket.timeout:
                break
            if data[:4] == payload[:4]:
                rtts.append((time.monotonic() - t0) * 1000.0)
                break  # a late answer to an earlier datagram is skipped
        time.sleep(gap)
    print(json.dumps({"sent": count, "received": len(rtts),
                      "rtt_min_ms": round(min(rtts), 2) if rtts else None,
                      "rtt_median_ms": round(statistics.median(rtts), 2) if rtts else None}))


def sink(port, seconds, ready=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(1)
    announce(ready)
    s.settimeout(seconds)
    conn, _ = s.accept()
    conn.settimeout(seconds)
    while conn.recv(1 << 16):
        pass
    conn.sendall(b"k")  # the sender times until everything arrived, not until it left


def stream(host, port, mib):
    s = socket.create_connection((host, port), timeout=60)
    block = bytes(1 << 20)
    t0 = time.monotonic()
    for _ in range(mib):
        s.sendall(block)
    s.shutdown(socket.SHUT_WR)
    s.recv(1)
    seconds = time.monotonic() - t0
    print(json.dumps({"mbit_per_s": round(mib * 8 * 1.048576 / seconds, 1)}))


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "echo":
        echo(int(args[0]), float(args[1]), *args[2:3])
    elif mode == "ping":
        ping(args[0], int(args[1]), int(args[2]), float(args[3]), *map(float, args[4:5]))
    elif mode == "sink":
        sink(int(args[0]), float(args[1]), *args[2:3])
    elif mode == "stream":
        stream(args[0], int(args[1]), int(args[2]))
    else:
        sys.exit(f"link_probe.py: unknown mode '{mode}' (echo, ping, sink, stream)")
