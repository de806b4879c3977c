#!/usr/bin/env python3
"""tap_wire.py — a userspace Ethernet wire between two TAP devices, for the multihost harness.

The kernel here has no netem, but it has TUN/TAP. This program creates two TAP devices in the
root namespace (hosts.sh then moves each into a host's namespace: a TAP's descriptor stays valid
after `ip link set ... netns`) and forwards every frame from one to the other, each way:
  - after a fixed one-way delay (--delay-ms);
  - dropping a fraction of the frames at random (--loss, seeded: --seed);
  - serialised at a capped rate (--rate-mbit, 0: uncapped), behind a bounded queue (--queue-kb,
    tail drop when full, as a switch port's buffer).
Each direction is a FIFO: a frame leaves at max(arrival + delay, the previous frame's departure
+ its serialisation time), so frames are never reordered.

Signals: SIGUSR1 cuts the wire (every frame is dropped, as an unplugged cable), SIGUSR2 mends it,
SIGTERM/SIGINT end it. It also ends after --lifetime-s, or when its parent process goes, so a
killed test cannot leave it running; the TAP devices go with its descriptors.
It writes "ready" to --ready FILE once both devices exist, and its frame counts per direction
(JSON) to --stats FILE when it ends. Standard library only; taps without IFF_VNET_HDR, so the
kernel hands over whole frames no longer than the MTU and no offload settings are needed.
"""
import argparse
import collections
import fcntl
import json
import os
import random
import select
import signal
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000
MAX_FRAME = 65536


def open_tap(name):
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TAP | IFF_NO_PI))
    return fd


class Direction:
    """One way of the wire: frames read from src, written to dst after delay/loss/rate."""

    def __init__(self, name, src, dst, args, rng):
        self.name, self.src, self.dst = name, src, dst
        self.delay = args.delay_ms / 1000.0
        self.loss = args.loss
        self.bytes_per_s = args.rate_mbit * 1e6 / 8.0
        self.queue_limit = args.queue_kb * 1024
        self.rng = rng
        self.queue = collections.deque()  # (departure time, frame)
        self.queued_bytes = 0
        self.link_free_at = 0.0  # when the last queued frame has finished serialising
        self.stats = {"read": 0, "sent": 0, "dropped_loss": 0, "dropped_cut": 0, "dropped_queue": 0}

    def take(self, now, cut):
        """Reads what the source has (bounded per call), deciding each frame's fate."""
        for _ in range(256):
            try:
                frame = os.read(self.src, MAX_FRAME)
            except BlockingIOError:
                return
            if not frame:
                return
            self.stats["read"] += 1
            if cut:
                self.stats["dropped_cut"] += 1
            elif self.loss > 0.0 and self.rng.random() < self.loss:
                self.stats["dropped_loss"] += 1
            elif self.queue_limit > 0 and self.queued_bytes + len(frame) > self.queue_limit:
                self.stats["dropped_queue"] += 1
            else:
                leave = now + self.delay
                if self.bytes_per_s > 0.0:
                    # The frame is on the link from when the link is free until its last bit.
                    self.link_free_at = max(self.link_free_at, now) + len(frame) / self.bytes_per_s
                    leave = max(leave, self.link_free_at + self.delay)
                self.queue.append((leave, frame))
                self.queued_bytes += len(frame)

    def deliver(self, now):
        while self.queue and self.queue[0][0] <= now:
            _, frame = self.queue.popleft()
            self.queued_bytes -= len(frame)
            try:
                os.write(self.dst, frame)
                self.stats["sent"] += 1
            except OSError:  # the far side is down or its queue full: the frame is lost
                self.stats["dropped_queue"] += 1

    def next_due(self):
        return self.queue[0][0] if self.queue else None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tap-a", required=True)
    p.add_argument("--tap-b", required=True)
    p.add_argument("--delay-ms", type=float, default=0.0, help="one-way delay")
    p.add_argument("--loss", type=float, default=0.0, help="fraction of frames dropped, each way")
    p.add_argument("--rate-mbit", type=float, default=0.0, help="rate cap each way (0: none)")
    p.add_argument("--queue-kb", type=int, default=4096, help="queue bound each way (0: none)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--lifetime-s", type=float, required=True, help="ends itself after this long")
    p.add_argument("--ready", required=True, help="file written once both taps exist")
    p.add_argument("--stats", help="file the frame counts go to at the end (JSON)")
    args = p.parse_args()
    for what, value, ok in (("--delay-ms", args.delay_ms, args.delay_ms >= 0),
                            ("--loss", args.loss, 0.0 <= args.loss <= 1.0),
                            ("--rate-mbit", args.rate_mbit, args.rate_mbit >= 0),
                            ("--lifetime-s", args.lifetime_s, args.lifetime_s > 0)):
        if not ok:
            sys.exit(f"tap_wire.py: {what} {value} is out of range")

    state = {"cut": False, "stop": False}
    signal.signal(signal.SIGUSR1, lambda *_: state.update(cut=True))
    signal.signal(signal.SIGUSR2, lambda *_: state.update(cut=False))
    signal.signal(signal.SIGTERM, lambda *_: state.update(stop=True))
    signal.signal(signal.SIGINT, lambda *_: state.update(stop=True))

    try:
        a = open_tap(args.tap_a)
        b = open_tap(args.tap_b)
    except OSError as e:
        sys.exit(f"tap_wire.py: cannot create TAP devices {args.tap_a}, {args.tap_b}: {e}")
    rng = random.Random(args.seed)
    ways = [Direction("a->b", a, b, args, rng), Direction("b->a", b, a, args, rng)]
    by_fd = {a: ways[0], b: ways[1]}
    with open(args.ready, "w") as f:
        f.write("ready\n")

    parent = os.getppid()
    end = time.monotonic() + args.lifetime_s
    while not state["stop"]:
        now = time.monotonic()
        if now >= end or os.getppid() != parent:
            break
        dues = [d for d in (w.next_due() for w in ways) if d is not None]
        wait = min([0.2] + [max(0.0, d - now) for d in dues])
        try:
            readable, _, _ = select.select([a, b], [], [], wait)
        except InterruptedError:
            readable = []
        now = time.monotonic()
        for fd in readable:
            by_fd[fd].take(now, state["cut"])
        for w in ways:
            w.deliver(now)

    if args.stats:
        with open(args.stats, "w") as f:
            json.dump({w.name: w.stats for w in ways}, f)
    os.close(a)
    os.close(b)


if __name__ == "__main__":
    main()
