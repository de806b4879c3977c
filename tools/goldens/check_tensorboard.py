#!/usr/bin/env python3
"""check_tensorboard.py — TensorBoard's verdict on a run directory's event files.

Reads RUN_DIR with TensorBoard's own EventAccumulator (the loader behind `tensorboard --logdir`:
record framing, masked CRC32C, Event protobufs, and the SessionLog START purge a resumed run relies
on) and checks that every scalar tag holds exactly the records of RUN_DIR/metrics.jsonl, step for
step, as float32; prints a line per tag and exits non-zero on any difference. Exit 77 (ctest:
skipped) when the tensorboard package is not installed.

    python3 tools/goldens/check_tensorboard.py runs/demo [--expect-files N] [--require TAG ...]
    python3 tools/goldens/check_tensorboard.py --print-record-goldens   # bytes for the C++ test

Needs: pip install tensorboard. Run by ctest as train_tensorboard (tests/train/loop/test_train_tensorboard.sh).
"""
import argparse
import glob
import io
import json
import os
import struct
import sys

try:
    from tensorboard.backend.event_processing import event_accumulator
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.record_writer import RecordWriter
except ImportError as e:
    print(f"SKIP: the tensorboard package is not installed ({e}); pip install tensorboard")
    sys.exit(77)

# metrics.jsonl key -> tag, as kTensorBoardTags in train/loop/metrics_log.h.
TAGS = {
    "loss": "train/loss",
    "eval_loss": "eval/loss",
    "lr": "train/lr",
    "grad_norm": "train/grad_norm",
    "unchanged_fraction": "train/unchanged_weight_fraction",
    "loss_scale": "train/loss_scale",
    "tokens_per_s": "perf/tokens_per_s",
    "mfu": "perf/mfu",
    "step_seconds": "perf/step_seconds",
    "peak_mem_bytes": "perf/peak_mem_bytes",
}


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def print_record_goldens():
    def record(event):
        out = io.BytesIO()
        RecordWriter(out).write(event.SerializeToString())
        return out.getvalue().hex()

    Value = summary_pb2.Summary.Value
    print(record(event_pb2.Event(wall_time=1.5, file_version="brain.Event:2")))
    print(record(event_pb2.Event(wall_time=1700000000.25, step=7, summary=summary_pb2.Summary(value=[
        Value(tag="train/loss", simple_value=2.25), Value(tag="perf/peak_mem_bytes", simple_value=123456789.0)]))))
    print(record(event_pb2.Event(wall_time=2.0, step=300,
                                 session_log=event_pb2.SessionLog(status=event_pb2.SessionLog.START))))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run_dir", nargs="?")
    p.add_argument("--expect-files", type=int, default=None, help="number of event files RUN_DIR must hold")
    p.add_argument("--require", nargs="*", default=["train/loss", "eval/loss", "train/lr", "train/grad_norm",
                                                    "perf/tokens_per_s", "perf/peak_mem_bytes",
                                                    "train/unchanged_weight_fraction"],
                   help="tags that must be present")
    p.add_argument("--print-record-goldens", action="store_true")
    a = p.parse_args()
    if a.print_record_goldens:
        print_record_goldens()
        return 0
    if not a.run_dir:
        p.error("RUN_DIR is required")

    files = sorted(glob.glob(os.path.join(a.run_dir, "events.out.tfevents.*")))
    ok = True
    print(f"{len(files)} event file(s): {', '.join(os.path.basename(f) for f in files)}")
    if not files or (a.expect_files is not None and len(files) != a.expect_files):
        print(f"FAIL: expected {a.expect_files if a.expect_files is not None else 'at least 1'} event file(s)")
        return 1

    want = {}  # tag -> [(step, value)] from metrics.jsonl
    with open(os.path.join(a.run_dir, "metrics.jsonl")) as f:
        for line in f:
            record = json.loads(line)
            for key, tag in TAGS.items():
                if key in record and not isinstance(record[key], bool):
                    want.setdefault(tag, []).append((record["step"], f32(float(record[key]))))

    acc = event_accumulator.EventAccumulator(a.run_dir, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    got_tags = sorted(acc.Tags()["scalars"])
    if acc.file_version != 2.0:
        print(f"FAIL: file_version {acc.file_version}, expected 2 (brain.Event:2)")
        ok = False
    for tag in a.require:
        if tag not in got_tags:
            print(f"FAIL: tag {tag} missing; the files hold {got_tags}")
            ok = False
    for tag in sorted(set(want) | set(got_tags)):
        got = [(e.step, e.value) for e in acc.Scalars(tag)] if tag in got_tags else []
        expected = want.get(tag, [])
        same = got == expected
        ok &= same
        print(f"{'ok' if same else 'FAIL'}: {tag}: {len(got)} points (steps {got[0][0] if got else '-'}.."
              f"{got[-1][0] if got else '-'}), metrics.jsonl has {len(expected)}")
        if not same:
            diff = [(g, w) for g, w in zip(got, expected) if g != w][:3]
            print(f"    first differences (event file, metrics.jsonl): {diff}")
    print("tensorboard reads the run like metrics.jsonl:", ok)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
