// Errors: one exception type, checks that name the failing condition, size checks.
#pragma once

#include <cstddef>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

#include "condsim/core.h"

namespace condsim {

// every error condsim reports to a caller; what() is a full, user-facing sentence
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// a simulation whose state became NaN/Inf: the environment, the body (-1: the solver's iterate
// as a whole) and the step it happened in; the world's state is left as it was before the step
class DivergenceError : public Error {
 public:
  DivergenceError(const std::string& what, Index env, Index body, Index step)
      : Error(what), env_(env), body_(body), step_(step) {}
  Index env() const { return env_; }
  Index body() const { return body_; }
  Index step() const { return step_; }

 private:
  Index env_, body_, step_;
};

namespace internal {
// messages are written for users (they name the input and the field); the failing condition and
// source location are kept out of them
[[noreturn]] inline void ThrowCheckFailure(const char* /*file*/, int /*line*/, const char* /*condition*/,
                                           const std::string& message) {
  throw Error(message);
}
}  // namespace internal

// converts a size to Index, failing loudly when it does not fit in 32 bits
inline Index CheckedIndex(std::size_t n, const char* what) {
  if (n > static_cast<std::size_t>(std::numeric_limits<Index>::max())) {
    throw Error(std::string(what) + " = " + std::to_string(n) +
                " exceeds the 32-bit index limit (2147483647)");
  }
  return static_cast<Index>(n);
}

}  // namespace condsim

// host-only check: throws condsim::Error with the streamed message when cond is false
#define CONDSIM_CHECK(cond, msg)                                                  \
  do {                                                                            \
    if (!(cond)) {                                                                \
      std::ostringstream condsim_check_msg_;                                      \
      condsim_check_msg_ << msg;                                                  \
      ::condsim::internal::ThrowCheckFailure(__FILE__, __LINE__, #cond,           \
                                             condsim_check_msg_.str());           \
    }                                                                             \
  } while (0)
