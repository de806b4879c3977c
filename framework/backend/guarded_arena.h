// guarded_arena.h — memory that host code cannot touch except inside an access scope: the
// strict test device's "device memory" (strict_device_backend.h).
//
// One reserved address range (mmap, PROT_NONE), carved first-fit into 64-byte aligned blocks.
// Its used pages become readable and writable only while an Access scope is open — that is,
// while a backend op runs — so any other host read or write of a block faults at once. A
// SIGSEGV handler names the arena in the crash, so the test log says what went wrong.
// Scopes nest and are serialized by one mutex: an op on one thread cannot close the arena under
// another thread's op.
// Relies on: POSIX mmap/mprotect/sigaction. Tested by: tests/backend/test_strict_device.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace farthing {

class GuardedArena {
 public:
  explicit GuardedArena(size_t reserve_bytes);
  ~GuardedArena();
  GuardedArena(const GuardedArena&) = delete;
  GuardedArena& operator=(const GuardedArena&) = delete;

  // nullptr when the reservation is exhausted.
  void* allocate(size_t bytes);
  void free(void* data);
  // True when p points into a live block (anywhere inside it, or one past its end).
  bool holds(const void* p) const;
  size_t used_bytes() const;
  // How far into the reservation blocks have ever reached: grows only when no freed gap fits.
  size_t high_water_bytes() const;

  // While one exists (on any thread), the arena's used pages are open to the host.
  class Access {
   public:
    explicit Access(GuardedArena& arena);
    ~Access();
    Access(const Access&) = delete;
    Access& operator=(const Access&) = delete;

   private:
    GuardedArena& arena_;
    std::unique_lock<std::recursive_mutex> lock_;
  };

 private:
  void set_open(bool open);
  std::byte* base_ = nullptr;
  size_t reserved_ = 0;
  size_t high_water_ = 0;          // bytes from base_ ever handed out (pages toggled together)
  std::map<size_t, size_t> free_;  // offset -> size of free gaps below high_water_
  std::map<size_t, size_t> used_;  // offset -> size of live blocks
  mutable std::recursive_mutex mutex_;
  int depth_ = 0;
};

}  // namespace farthing
