// guarded_arena.cpp — see guarded_arena.h.
#include "framework/backend/guarded_arena.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "framework/core/error.h"

namespace farthing {

namespace {

constexpr size_t kAlign = 64;
size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }
size_t page_size() { return size_t(sysconf(_SC_PAGESIZE)); }

// The one arena the fault handler names (tests make one strict backend per process).
std::atomic<std::byte*> g_arena_base{nullptr};
std::atomic<size_t> g_arena_bytes{0};

void on_fault(int, siginfo_t* info, void*) {
  const auto* addr = static_cast<const std::byte*>(info->si_addr);
  const std::byte* base = g_arena_base.load();
  if (base != nullptr && addr >= base && addr < base + g_arena_bytes.load()) {
    static const char message[] =
        "farthing: strict device: host code read or wrote device memory outside a backend op (a host "
        "assumption on the device path: route it through Backend/NnOps, or stage it with Backend::copy)\n";
    const ssize_t written = write(STDERR_FILENO, message, sizeof message - 1);
    static_cast<void>(written);
  }
  // Back to the default action: the access runs again and the process dies with SIGSEGV.
  signal(SIGSEGV, SIG_DFL);
}

}  // namespace

GuardedArena::GuardedArena(size_t reserve_bytes) : reserved_(align_up(reserve_bytes, page_size())) {
  void* p = mmap(nullptr, reserved_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  FARTHING_CHECK(p != MAP_FAILED, "strict device: cannot reserve ", reserved_, " bytes of address space: ",
                 std::strerror(errno));
  base_ = static_cast<std::byte*>(p);
  g_arena_base.store(base_);
  g_arena_bytes.store(reserved_);
  struct sigaction action {};
  action.sa_sigaction = on_fault;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  sigaction(SIGSEGV, &action, nullptr);
}

GuardedArena::~GuardedArena() {
  g_arena_base.store(nullptr);
  munmap(base_, reserved_);
}

void* GuardedArena::allocate(size_t bytes) {
  std::lock_guard lock(mutex_);
  const size_t need = align_up(bytes == 0 ? 1 : bytes, kAlign);
  size_t offset = high_water_;
  for (auto it = free_.begin(); it != free_.end(); ++it) {  // first fit
    if (it->second < need) continue;
    offset = it->first;
    const size_t rest = it->second - need;
    free_.erase(it);
    if (rest > 0) free_[offset + need] = rest;
    break;
  }
  if (offset == high_water_) {
    if (high_water_ + need > reserved_) return nullptr;
    const size_t old_pages = align_up(high_water_, page_size());
    high_water_ += need;
    // Pages newly in use take the arena's current state (open inside an op, closed outside).
    const size_t new_pages = align_up(high_water_, page_size());
    if (depth_ > 0 && new_pages > old_pages) {
      FARTHING_CHECK(mprotect(base_ + old_pages, new_pages - old_pages, PROT_READ | PROT_WRITE) == 0,
                     "strict device: mprotect failed: ", std::strerror(errno));
    }
  }
  used_[offset] = need;
  return base_ + offset;
}

void GuardedArena::free(void* data) {
  if (data == nullptr) return;
  std::lock_guard lock(mutex_);
  const size_t offset = size_t(static_cast<std::byte*>(data) - base_);
  const auto it = used_.find(offset);
  FARTHING_CHECK(it != used_.end(), "strict device: free of a pointer the arena never handed out");
  size_t begin = offset, size = it->second;
  used_.erase(it);
  // Coalesce with the free neighbours, so first fit finds large gaps again.
  auto next = free_.find(begin + size);
  if (next != free_.end()) {
    size += next->second;
    free_.erase(next);
  }
  auto after = free_.lower_bound(begin);
  if (after != free_.begin()) {
    auto prev = std::prev(after);
    if (prev->first + prev->second == begin) {
      begin = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
  }
  free_[begin] = size;
}

bool GuardedArena::holds(const void* p) const {
  std::lock_guard lock(mutex_);
  const auto* b = static_cast<const std::byte*>(p);
  if (b < base_ || b > base_ + high_water_) return false;
  const size_t offset = size_t(b - base_);
  auto it = used_.upper_bound(offset);
  if (it == used_.begin()) return false;
  --it;
  // One past a block's end counts (an empty range at the end of a buffer is a valid argument).
  return offset <= it->first + it->second;
}

size_t GuardedArena::high_water_bytes() const {
  std::lock_guard lock(mutex_);
  return high_water_;
}

size_t GuardedArena::used_bytes() const {
  std::lock_guard lock(mutex_);
  size_t total = 0;
  for (const auto& [offset, size] : used_) total += size;
  return total;
}

void GuardedArena::set_open(bool open) {
  const size_t bytes = align_up(high_water_, page_size());
  if (bytes == 0) return;
  FARTHING_CHECK(mprotect(base_, bytes, open ? PROT_READ | PROT_WRITE : PROT_NONE) == 0,
                 "strict device: mprotect failed: ", std::strerror(errno));
}

GuardedArena::Access::Access(GuardedArena& arena) : arena_(arena), lock_(arena.mutex_) {
  if (arena_.depth_++ == 0) arena_.set_open(true);
}

GuardedArena::Access::~Access() {
  if (--arena_.depth_ == 0) arena_.set_open(false);
}

}  // namespace farthing
