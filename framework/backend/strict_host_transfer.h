// strict_host_transfer.h — the strict test device's HostTransfer: every copy is deferred, as an
// asynchronous copy on a GPU's copy stream is, and its destination reads as NaN until it lands.
//
// A copy issued here does nothing but poison its destination (every byte 0xFF: NaN in f32, bf16
// and fp16) and join a queue. The queue runs in issue order, and only when the contract of
// host_transfer.h says the copy must be done: wait(ticket) lands the copies up to `ticket`,
// order_device_after_copies() lands all of them. So host code that reads a copy's
// destination before waiting for it, or a device op that reads weights copied back before the
// ordering, sees NaN on any machine, where the CPU's synchronous copies would hide the mistake
// and only a GPU's timing could show it.
// NOTE: what a copy reads is read when it lands, not when it is issued (a GPU's copy stream reads
// it then too), with one exception the queue's order guarantees: a later copy that overwrites
// the source of a copy still queued first stages that source, so the earlier copy still moves
// what was there when the later one was issued (a ring slot copied back and then refilled).
// Relies on: host_transfer.h, backend.h. Tested by: tests/backend/test_strict_host_transfer.cpp,
// tests/optim/test_host_step_ring.cpp, tests/train/loop/test_offload_timeline.cpp.
#pragma once

#include <memory>

#include "framework/backend/backend.h"
#include "framework/backend/host_transfer.h"

namespace farthing {

// device: the strict device's backend (copies go through its Backend::copy when they land).
std::unique_ptr<HostTransfer> make_strict_host_transfer(Backend& device);

}  // namespace farthing
