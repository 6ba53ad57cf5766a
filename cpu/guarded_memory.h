// The guarded-memory mode of the CPU backend (CONDSIM_CPU_GUARD=1): backend arrays in one reserved
// region that is inaccessible (PROT_NONE) outside launches and copies, new memory filled with NaN
// bytes, and each launched functor scanned for pointers into host memory. Host code that would
// crash on a GPU (reading device memory, a kernel holding a host pointer) fails on the CPU too.
// docs/architecture.md, "Checking the CUDA path without a GPU".
#pragma once

#include <cstddef>
#include <typeinfo>

namespace condsim::cpu {

// true when CONDSIM_CPU_GUARD=1 (read once, with the other check modes: cpu::Checks())
bool GuardOn();

// memory of the guarded region: page-rounded blocks, filled with 0xFF bytes (doubles NaN,
// integers -1); throws condsim::Error when the region is full
void* GuardedAllocate(std::size_t bytes);
// fills the block with 0xFF again (a read after free is NaN) and returns it to the free list
void GuardedFree(void* ptr) noexcept;
// whether p lies inside the guarded region (false when the region does not exist)
bool InGuardedRegion(const void* p);

// opens the region (read/write) for its lifetime; scopes nest and may be opened by several
// threads at once: the region closes when the last one ends. A no-op when the mode is off.
class GuardScope {
 public:
  GuardScope();
  ~GuardScope();
  GuardScope(const GuardScope&) = delete;
  GuardScope& operator=(const GuardScope&) = delete;

 private:
  bool open_ = false;
};

// throws condsim::Error naming the functor type and the word when an aligned 8-byte word of the
// functor's bytes is a pointer into host memory (a mapped range of the process outside the
// region: heap, stack, static data); pointers into the region are fine
void CheckFunctorPointers(const void* functor, std::size_t bytes, const std::type_info& type);

}  // namespace condsim::cpu
