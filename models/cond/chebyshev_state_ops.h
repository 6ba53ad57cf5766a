// The per-environment state machine of the Chebyshev semi-iteration (paper Alg. 3, Sec. IV-D;
// docs/solver.md "Chebyshev safeguard") on the backend: one item per environment, so the solver
// loop uploads no nu; the host reads theta^2, the restarts and the failure flag per environment
// (24 B) once per convergence check (every CondParams::check_every iterations). Double precision throughout, the operations in the order the host ran them
// before (bitwise the same nu, restarts and theta).
#pragma once

#include <cfloat>
#include <cmath>

#include "condsim/core.h"

namespace condsim {

// one environment's state between iterations
struct CondChebyshevEnv {
  double theta_prev;  // theta of the last iteration it ran
  double rho;         // eq. 39's estimate
  double nu;          // eq. 38's nu of the next iteration (1: plain)
  double theta_min;   // smallest residual of the running semi-iteration
  int l_min;          // the iteration of theta_min
  int plain;          // plain iterations after a restart (l_s, doubled at each restart)
  int cheb_start;     // the iteration its semi-iteration (re)starts at
  int restarts;       // restarts in this solve (CondStats::chebyshev_restarts)
  int failed;         // theta was not finite at an iteration of this solve (it stopped there)
  int unused;         // explicit padding, set: the state is copied whole (compute-sanitizer initcheck)
  double rho_plain;   // rho of the last plain iteration before the running semi-iteration
};
static_assert(sizeof(CondChebyshevEnv) == 5 * sizeof(double) + 6 * sizeof(int), "CondChebyshevEnv has hidden padding");

// the safeguard's bounds for a semi-iteration started after a plain rate rho_plain: restart when
// theta grows to `growth` times its smallest or finds no new smallest in `window` iterations.
// Fixed: 10 and 2 l_s. Rate (CondParams::chebyshev_safeguard): for a linear iteration with spectrum
// in [-rho, rho] the Chebyshev error polynomial stays below 1, so a step may grow to 2 |e_0| <=
// 2 theta_0 / (1 - rho), and the error starts to fall after ~1 / sqrt(2 (1 - rho)) iterations
// (T_k(1 / rho) = cosh(k acosh(1 / rho)), acosh(1 / rho) ~ sqrt(2 (1 - rho))): growth
// max(10, 2 / g) and window max(2 l_s, 2 / sqrt(g)), g = max(1 - rho_plain, kMinRateGap)
struct ChebyshevBounds {
  static constexpr double kRestartGrowth = 10;
  static constexpr double kMinRateGap = 1e-4;  // caps the rate bounds at 2e4 and 200 iterations
  double growth;
  double window;
  CONDSIM_HD_INLINE ChebyshevBounds(bool rate, double rho_plain, int chebyshev_start)
      : growth(kRestartGrowth), window(2.0 * chebyshev_start) {
    if (!rate) return;
    const double gap = 1 - rho_plain > kMinRateGap ? 1 - rho_plain : kMinRateGap;
    if (2 / gap > growth) growth = 2 / gap;
    if (2 / std::sqrt(gap) > window) window = 2 / std::sqrt(gap);
  }
};

// per environment at the start of a solve: plain until l_s
struct CondChebyshevResetOp {
  int chebyshev_start;  // l_s
  CondChebyshevEnv* env;
  CONDSIM_HD_INLINE void operator()(Index e) const {
    CondChebyshevEnv& s = env[e];
    s.theta_prev = 0;
    s.rho = 1;
    s.nu = 1;
    s.theta_min = 0;
    s.l_min = 0;
    s.plain = chebyshev_start;
    s.cheb_start = chebyshev_start;
    s.restarts = 0;
    s.failed = 0;
    s.unused = 0;
    s.rho_plain = 1;
  }
};

// per environment before iteration l when the coarse space changed (truncated modes,
// CondBodyModes::Refresh): a running semi-iteration starts afresh at l + l_s, iteration l is
// plain (nu = 1); not counted as a restart (the safeguard's restarts are failures)
struct CondChebyshevRestartOp {
  int l;                // the iteration about to run
  int chebyshev_start;  // l_s
  CondChebyshevEnv* env;
  Scalar* nu_env;       // iteration l's nu per environment
  const unsigned char* only;  // per environment: restart it (null: all)
  CONDSIM_HD_INLINE void operator()(Index e) const {
    CondChebyshevEnv& s = env[e];
    if ((only != nullptr && !only[e]) || s.cheb_start > l) return;
    s.cheb_start = l + chebyshev_start;
    s.nu = 1;
    nu_env[e] = 1;
  }
};

// the first of the ascending chunk starts chunk_begin[0 .. chunks) at or after DOF k (lower bound)
CONDSIM_HD_INLINE Index FirstChunkAt(const Index* chunk_begin, Index chunks, Index k) {
  Index lo = 0, hi = chunks;
  while (lo < hi) {
    const Index mid = lo + (hi - lo) / 2;
    if (chunk_begin[mid] < k) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// per environment after iteration l's theta^2: its sum (the fused pass's chunk sums folded in
// chunk order: the chunks starting in its DOF range, or given), then, when it is running and theta is finite, rho = min(theta /
// theta_prev, 1) (eq. 39) and the safeguard (an accelerated residual that grew to
// ChebyshevBounds::growth times the smallest of this semi-iteration, or found no new smallest in
// ChebyshevBounds::window iterations, restarts it after `plain` plain iterations, doubled at each
// restart); then
// for every environment the nu of iteration l + 1 (Alg. 3 line 7, eq. 38) into nu_env. A running
// environment whose theta is not finite stops here (env_active[e] = 0: the commit skips it, or
// CondRestoreOp undoes the fused commit, so it keeps its last finite iterate between the host's
// checks). The host's read: check[e] = theta^2, check[num_envs + e] = the restarts so far,
// check[2 num_envs + e] = 1 when it failed in this solve (exact integers)
struct CondChebyshevStepOp {
  const Scalar* chunk_sum;    // the fused pass's chunk sums (null: theta2 given)
  const Index* chunk_begin;   // and the chunks' first DOFs (ascending)
  Index chunks;
  const Index* dof_offsets;   // each environment's DOF range, num_envs + 1 entries
  const Scalar* theta2;       // theta^2 per environment when chunk_sum is null
  unsigned char* env_active;  // cleared where theta is not finite
  Index num_envs;
  int l;                      // the iteration that just ran
  bool chebyshev;             // CondParams::chebyshev
  int chebyshev_start;        // l_s
  int max_iterations;         // l_max (bounds the plain stretch)
  bool rate_safeguard;        // ChebyshevSafeguard::kRate: the bounds from rho_plain (ChebyshevBounds)
  CondChebyshevEnv* env;
  Scalar* nu_env;             // the next iteration's nu per environment (Chebyshev only)
  Scalar* check;              // 3 num_envs: theta^2, the restarts, the failure flags
  CONDSIM_HD_INLINE void operator()(Index e) const {
    CondChebyshevEnv s = env[e];
    Scalar sum = 0;
    if (chunk_sum != nullptr) {
      const Index end = FirstChunkAt(chunk_begin, chunks, dof_offsets[e + 1]);
      for (Index c = FirstChunkAt(chunk_begin, chunks, dof_offsets[e]); c < end; ++c) sum = sum + chunk_sum[c];
    } else {
      sum = theta2[e];
    }
    const double theta = std::sqrt(double(sum));
    // theta >= 0 or NaN: finite iff <= DBL_MAX (a failed environment keeps its state)
    if (env_active[e] && theta <= DBL_MAX) {
      if (s.theta_prev > 0) {
        const double q = theta / s.theta_prev;
        s.rho = 1.0 < q ? 1.0 : q;  // eq. 39 (std::min's comparison)
      } else {
        s.rho = 1.0;
      }
      if (chebyshev && l >= s.cheb_start) {
        if (l == s.cheb_start || theta < s.theta_min) {
          s.theta_min = theta;
          s.l_min = l;
        }
        const ChebyshevBounds bound(rate_safeguard, s.rho_plain, chebyshev_start);
        if (theta > bound.growth * s.theta_min || l - s.l_min >= bound.window) {
          s.plain = max_iterations < 2 * s.plain ? max_iterations : 2 * s.plain;
          s.cheb_start = l + 1 + s.plain;
          ++s.restarts;
        }
      }
      s.theta_prev = theta;
    } else if (env_active[e]) {
      env_active[e] = 0;
      s.failed = 1;
    }
    // nu of the next iteration, per environment from its own l_s
    const int next = l + 1;
    if (chebyshev && next >= chebyshev_start) {
      if (next < s.cheb_start) {
        s.nu = 1;
      } else {
        s.nu = next == s.cheb_start ? 2 / (2 - s.rho * s.rho) : 4 / (4 - s.rho * s.rho * s.nu);  // eq. 38
        if (next == s.cheb_start) s.rho_plain = s.rho;
      }
      nu_env[e] = static_cast<Scalar>(s.nu);
    }
    env[e] = s;
    check[e] = sum;
    check[num_envs + e] = static_cast<Scalar>(s.restarts);
    check[2 * num_envs + e] = static_cast<Scalar>(s.failed);
  }
};

}  // namespace condsim
