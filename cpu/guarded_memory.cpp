// The guarded-memory mode of the CPU backend (cpu/guarded_memory.h).
#include "cpu/guarded_memory.h"

#include <cxxabi.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "condsim/error.h"
#include "cpu/parallel.h"

namespace condsim::cpu {

bool GuardOn() { return Checks().guard; }

namespace {

constexpr std::size_t kPage = 4096;
// address space reserved for the region (PROT_NONE, MAP_NORESERVE: costs nothing until used);
// halved until the reservation succeeds, down to kMinReserve
constexpr std::size_t kReserve = std::size_t(64) << 30;
constexpr std::size_t kMinReserve = std::size_t(1) << 30;
// the used part of the region grows by 2 MiB (a huge page): see Region::Poison
constexpr std::size_t kChunk = std::size_t(2) << 20;

// read by the SIGSEGV handler: plain atomics, set once
std::atomic<std::uintptr_t> g_base{0};
std::atomic<std::uintptr_t> g_end{0};
struct sigaction g_previous_segv;

// async-signal-safe: write(2) of a fixed text and a hex address, then abort
void OnSegv(int /*sig*/, siginfo_t* info, void* /*context*/) {
  const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
  if (addr >= g_base.load(std::memory_order_relaxed) && addr < g_end.load(std::memory_order_relaxed)) {
    char text[160];
    const char head[] = "CONDSIM_CPU_GUARD: host access to backend memory at 0x";
    std::size_t n = sizeof(head) - 1;
    std::memcpy(text, head, n);
    char hex[16];
    int digits = 0;
    std::uintptr_t a = addr;
    do {
      hex[digits++] = "0123456789abcdef"[a & 0xf];
      a >>= 4;
    } while (a != 0);
    while (digits > 0) text[n++] = hex[--digits];
    const char tail[] = " (outside a launch or copy: this code would crash on a GPU)\n";
    std::memcpy(text + n, tail, sizeof(tail) - 1);
    n += sizeof(tail) - 1;
    ssize_t ignored = write(STDERR_FILENO, text, n);
    (void)ignored;
    std::abort();
  }
  // not ours: restore the previous action; the access faults again and takes it
  sigaction(SIGSEGV, &g_previous_segv, nullptr);
}

[[noreturn]] void Fatal(const char* what) {
  std::fprintf(stderr, "CONDSIM_CPU_GUARD: %s failed: %s\n", what, std::strerror(errno));
  std::abort();
}

// the region: [base, base + capacity) reserved, [base, top) in use (blocks and free blocks)
class Region {
 public:
  static Region& Get() {
    static Region* region = new Region();  // never destroyed: arrays may outlive static objects
    return *region;
  }

  void* Allocate(std::size_t bytes) {
    const std::size_t size = std::max<std::size_t>(kPage, (bytes + kPage - 1) / kPage * kPage);
    const std::lock_guard<std::mutex> hold(lock_);
    std::size_t offset = top_;
    // first fit among the free blocks
    auto fit = std::find_if(free_.begin(), free_.end(), [&](const auto& b) { return b.second >= size; });
    if (fit != free_.end()) {
      offset = fit->first;
      const std::size_t left = fit->second - size;
      free_.erase(fit);
      if (left > 0) free_[offset + size] = left;
    } else {
      if (top_ + size > capacity_) {
        std::ostringstream msg;
        msg << "CONDSIM_CPU_GUARD: the guarded region (" << (capacity_ >> 20) << " MiB) is full allocating "
            << bytes << " bytes";
        throw Error(msg.str());
      }
      top_ += size;
      if (top_ > mapped_) {
        const std::size_t grown = (top_ + kChunk - 1) / kChunk * kChunk;
        Protect(mapped_, grown - mapped_, open_ > 0 ? PROT_READ | PROT_WRITE : PROT_NONE);
        mapped_ = grown;
        Protect(mapped_, kPage, PROT_READ);  // the fence after it (see Region())
      }
    }
    live_[offset] = size;
    Poison(offset, size);
    return base_ + offset;
  }

  void Free(void* ptr) noexcept {
    const std::lock_guard<std::mutex> hold(lock_);
    const auto it = live_.find(std::size_t(static_cast<char*>(ptr) - base_));
    if (it == live_.end()) {
      std::fprintf(stderr, "CONDSIM_CPU_GUARD: free of %p, which is no block of the region\n", ptr);
      std::abort();
    }
    std::size_t offset = it->first, size = it->second;
    live_.erase(it);
    Poison(offset, size);
    // coalesce with the free neighbours
    auto next = free_.find(offset + size);
    if (next != free_.end()) {
      size += next->second;
      free_.erase(next);
    }
    auto prev = free_.lower_bound(offset);
    if (prev != free_.begin() && std::prev(prev)->first + std::prev(prev)->second == offset) {
      --prev;
      offset = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
    if (offset + size == top_) {
      top_ = offset;  // the block ended the used part (its pages stay mapped, for the next growth)
    } else {
      free_[offset] = size;
    }
  }

  void Open() {
    const std::lock_guard<std::mutex> hold(lock_);
    if (open_++ == 0 && mapped_ > 0) Protect(0, mapped_, PROT_READ | PROT_WRITE);
  }
  void Close() noexcept {
    const std::lock_guard<std::mutex> hold(lock_);
    if (--open_ == 0 && mapped_ > 0) Protect(0, mapped_, PROT_NONE);
  }

 private:
  Region() {
    void* p = MAP_FAILED;
    for (capacity_ = kReserve; capacity_ >= kMinReserve; capacity_ /= 2) {
      p = mmap(nullptr, capacity_ + kChunk, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p != MAP_FAILED) break;
    }
    if (p == MAP_FAILED) throw Error("CONDSIM_CPU_GUARD: cannot reserve the guarded region: " + std::string(std::strerror(errno)));
    // the base on a huge-page boundary (the reservation's slack beyond it stays unused)
    const auto start = reinterpret_cast<std::uintptr_t>(p);
    base_ = reinterpret_cast<char*>((start + kChunk - 1) / kChunk * kChunk);
    p = base_;
    // transparent huge pages where the system allows them: opening and closing the region changes
    // one entry per 2 MiB instead of one per 4 KiB page (mprotect dominates the mode's cost)
    madvise(p, capacity_, MADV_HUGEPAGE);
    g_base.store(reinterpret_cast<std::uintptr_t>(base_));
    g_end.store(reinterpret_cast<std::uintptr_t>(base_) + capacity_);
    // a read-only fence page after [0, mapped_): the opened or closed used part never has the
    // protection of its neighbours, so the kernel neither splits nor merges mappings at every
    // launch (half the cost of a launch in this mode)
    Protect(0, kPage, PROT_READ);
    struct sigaction action {};
    action.sa_sigaction = OnSegv;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGSEGV, &action, &g_previous_segv) != 0) Fatal("sigaction");
  }

  void Protect(std::size_t offset, std::size_t size, int prot) noexcept {
    if (mprotect(base_ + offset, size, prot) != 0) Fatal("mprotect");
  }
  // 0xFF in every byte, opening the region for the fill when it is closed (lock held; the whole
  // of [0, mapped_) changes at once, so that it stays one mapping of whole huge pages)
  void Poison(std::size_t offset, std::size_t size) noexcept {
    if (open_ == 0) Protect(0, mapped_, PROT_READ | PROT_WRITE);
    std::memset(base_ + offset, 0xFF, size);
    if (open_ == 0) Protect(0, mapped_, PROT_NONE);
  }

  std::mutex lock_;
  char* base_ = nullptr;
  std::size_t capacity_ = 0;
  std::size_t top_ = 0;     // [0, top_): blocks and free blocks
  std::size_t mapped_ = 0;  // [0, mapped_): opened and closed as a whole (whole kChunks)
  int open_ = 0;                                    // open scopes
  std::map<std::size_t, std::size_t> free_;          // offset -> size
  std::unordered_map<std::size_t, std::size_t> live_;  // offset -> size
};

// the process's mapped address ranges (/proc/self/maps), reread when a word looks like a pointer
// but lies in no known range (a mapping made since the last read)
class HostRanges {
 public:
  static HostRanges& Get() {
    static HostRanges* ranges = new HostRanges();
    return *ranges;
  }
  bool Mapped(std::uintptr_t w) {
    const std::lock_guard<std::mutex> hold(lock_);
    if (Find(w)) return true;
    const std::uintptr_t page = w / kPage;
    if (unmapped_pages_.count(page) > 0) return false;
    Load();
    if (Find(w)) return true;
    // remembered as not a pointer (numbers that look like addresses reread the maps once)
    if (unmapped_pages_.size() > 65536) unmapped_pages_.clear();
    unmapped_pages_.insert(page);
    return false;
  }

 private:
  bool Find(std::uintptr_t w) const {
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), std::make_pair(w, UINTPTR_MAX));
    return it != ranges_.begin() && w < std::prev(it)->second;
  }
  void Load() {
    ranges_.clear();
    std::FILE* maps = std::fopen("/proc/self/maps", "r");
    if (maps == nullptr) throw Error("CONDSIM_CPU_GUARD: cannot read /proc/self/maps");
    char line[4096];
    while (std::fgets(line, sizeof(line), maps) != nullptr) {
      unsigned long lo = 0, hi = 0;
      if (std::sscanf(line, "%lx-%lx", &lo, &hi) == 2) ranges_.emplace_back(lo, hi);
      // a line longer than the buffer: skip its rest
      while (std::strchr(line, '\n') == nullptr && std::fgets(line, sizeof(line), maps) != nullptr) {
      }
    }
    std::fclose(maps);
    std::sort(ranges_.begin(), ranges_.end());
  }

  std::mutex lock_;
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> ranges_;
  std::unordered_set<std::uintptr_t> unmapped_pages_;
};

std::string Demangle(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

}  // namespace

void* GuardedAllocate(std::size_t bytes) { return Region::Get().Allocate(bytes); }
void GuardedFree(void* ptr) noexcept { Region::Get().Free(ptr); }

bool InGuardedRegion(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  return a >= g_base.load(std::memory_order_relaxed) && a < g_end.load(std::memory_order_relaxed);
}

GuardScope::GuardScope() {
  if (!GuardOn()) return;
  Region::Get().Open();
  open_ = true;
}

GuardScope::~GuardScope() {
  if (open_) Region::Get().Close();
}

void CheckFunctorPointers(const void* functor, std::size_t bytes, const std::type_info& type) {
  const auto* p = static_cast<const unsigned char*>(functor);
  // a pointer member is 8-byte aligned within its functor (alignof(F) >= 8 then), so aligned
  // words from the functor's start cover every pointer it can hold
  for (std::size_t k = 0; k + sizeof(std::uintptr_t) <= bytes; k += sizeof(std::uintptr_t)) {
    std::uintptr_t w;
    std::memcpy(&w, p + k, sizeof(w));
    // below the first page or above user space (doubles, small integers): not an address
    if (w < kPage || w >= (std::uintptr_t(1) << 47)) continue;
    if (InGuardedRegion(reinterpret_cast<const void*>(w))) continue;
    if (!HostRanges::Get().Mapped(w)) continue;
    std::ostringstream msg;
    msg << "CONDSIM_CPU_GUARD: the functor " << Demangle(type.name()) << " holds a host pointer 0x" << std::hex << w
        << std::dec << " in word " << k / sizeof(std::uintptr_t) << " (byte offset " << k
        << "): a kernel may only hold pointers into backend memory (a GPU cannot dereference host memory)";
    throw Error(msg.str());
  }
}

}  // namespace condsim::cpu
