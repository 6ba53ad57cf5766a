// The COND velocity fixed-point iteration (Alg. 1 and 3), written once against the backend
// primitives and the shared COND kernels.
#include "models/cond/cond_solver.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include <Eigen/Dense>

#include "condsim/error.h"
#include "models/cond/cond_kernels.h"

namespace condsim {
namespace {
// a Chebyshev semi-iteration restarts when its residual grows to this multiple of its smallest
constexpr double kChebyshevRestartGrowth = 10;
// a body-mode patch needs 4 listed nodes (fewer: its rotations are degenerate); GridPatches
// makes patches of at least 8 points, and at most one per 16 points
constexpr Index kMinPatchNodes = 4;
constexpr Index kMinPatchPoints = 8;
constexpr double kPatchRegularization = 1e-10;
// a rigid group's own contacts are settled when a sweep changes no relative velocity by more than
// this fraction of theta_th
constexpr double kRigidSweepSettled = 0.1;
}  // namespace

const char* ToString(StepSize s) {
  switch (s) {
    case StepSize::kFrobenius:
      return "frobenius";
    case StepSize::kBB1:
      return "bb1";
    case StepSize::kBB2:
      return "bb2";
    case StepSize::kBBAlternate:
      return "bb-alternate";
  }
  return "?";
}

StepSize ParseStepSize(const std::string& name) {
  for (StepSize s : {StepSize::kFrobenius, StepSize::kBB1, StepSize::kBB2, StepSize::kBBAlternate})
    if (name == ToString(s)) return s;
  throw Error("unknown step size '" + name + "' (valid: frobenius, bb1, bb2, bb-alternate)");
}

Projection ParseProjection(const std::string& name) {
  if (name == "strict") return Projection::kStrict;
  if (name == "proximal") return Projection::kProximal;
  throw Error("unknown projection '" + name + "' (valid: strict, proximal)");
}

void CondParams::Validate() const {
  CONDSIM_CHECK(std::isfinite(theta_threshold) && theta_threshold > 0,
                "CondParams.theta_threshold must be a positive number [m/s], got " << theta_threshold);
  CONDSIM_CHECK(max_iterations >= 1, "CondParams.max_iterations must be >= 1, got " << max_iterations);
  CONDSIM_CHECK(w_reuse_solves >= 1, "CondParams.w_reuse_solves must be >= 1, got " << w_reuse_solves);
  CONDSIM_CHECK(chebyshev_start >= 2, "CondParams.chebyshev_start must be >= 2, got " << chebyshev_start);
  CONDSIM_CHECK(chebyshev_relax > 0 && chebyshev_relax <= 1,
                "CondParams.chebyshev_relax must be in (0, 1], got " << chebyshev_relax);
  CONDSIM_CHECK(std::isfinite(omega) && omega >= 0, "CondParams.omega must be >= 0, got " << omega);
  CONDSIM_CHECK(std::isfinite(w_safeguard) && w_safeguard >= 0 && w_safeguard < 2,
                "CondParams.w_safeguard must be in [0, 2) (0: off), got " << w_safeguard);
  CONDSIM_CHECK(rigid_sweeps >= 0 && rigid_sweeps <= 100, "CondParams.rigid_sweeps must be in [0, 100], got " << rigid_sweeps);
  CONDSIM_CHECK(body_mode_patches >= 1 && body_mode_patches <= kMaxBodyModePatches,
                "CondParams.body_mode_patches must be in [1, " << kMaxBodyModePatches << "], got " << body_mode_patches);
}

CondSolver::CondSolver(Backend* backend, const CondParams& params)
    : backend_(backend), params_(params), kernels_(MakeKernels<CondKernels>(*backend)) {
  params_.Validate();
}

CondSolver::~CondSolver() = default;

void CondSolver::set_params(const CondParams& p) {
  p.Validate();
  params_ = p;
  groups_dirty_ = true;  // the projection decides which contacts are valid
}

void CondSolver::SetNodeEnvironments(const std::vector<Index>& node_env) {
  for (std::size_t k = 0; k < node_env.size(); ++k) {
    CONDSIM_CHECK(node_env[k] >= 0, "node " << k << " has a negative environment " << node_env[k]);
    CONDSIM_CHECK(k == 0 || node_env[k] >= node_env[k - 1],
                  "node environments must be nondecreasing (contiguous environments), node " << k);
  }
  node_env_host_ = node_env;
  nodes_ = 0;  // re-prepare
  groups_dirty_ = true;
}

void CondSolver::SetRigidGroups(const RigidGroups& g) {
  const Index n = g.size(), nb = g.num_bodies();
  CONDSIM_CHECK(!g.body_ptr.empty() && g.body_ptr.front() == 0 && g.body_ptr.back() == nb && g.rot.size() == g.trans.size() &&
                    g.ptr.size() == std::size_t(nb) + 1 && g.arm.size() == 3 * g.node.size() && g.kv.size() == g.node.size() &&
                    std::size_t(g.ptr.back()) == g.node.size(),
                "SetRigidGroups: inconsistent arrays");
  std::vector<Index> inv_off{0};
  for (Index k = 0; k < n; ++k) {
    const Index size = g.body_ptr[k + 1] - g.body_ptr[k];
    CONDSIM_CHECK(size >= 1 && size <= kMaxRigidGroupBodies,
                  "SetRigidGroups: group " << k << " has " << size << " bodies (1 to " << kMaxRigidGroupBodies << ")");
    inv_off.push_back(inv_off.back() + 36 * size * size);
  }
  CONDSIM_CHECK(g.ao_inv.size() == std::size_t(inv_off.back()), "SetRigidGroups: ao_inv needs (6 n_g)^2 values per group");
  for (Scalar kv : g.kv) CONDSIM_CHECK(std::isfinite(kv) && kv > 0, "SetRigidGroups: kv must be > 0");
  rg_slot_body_host_.assign(g.node.size(), 0);
  rg_slot_group_host_.assign(g.node.size(), 0);
  for (Index k = 0; k < n; ++k)
    for (Index ba = g.body_ptr[k]; ba < g.body_ptr[k + 1]; ++ba)
      for (Index a = g.ptr[ba]; a < g.ptr[ba + 1]; ++a) {
        rg_slot_body_host_[a] = ba - g.body_ptr[k];
        rg_slot_group_host_[a] = k;
      }
  num_rigid_ = n;
  rg_max_node_ = -1;
  for (const auto* list : {&g.trans, &g.rot, &g.node})
    for (Index k : *list) rg_max_node_ = std::max(rg_max_node_, k);
  rg_body_ptr_ = Array<Index>(backend_, g.body_ptr);
  rg_inv_off_ = Array<Index>(backend_, inv_off);
  rg_trans_ = Array<Index>(backend_, g.trans);
  rg_rot_ = Array<Index>(backend_, g.rot);
  rg_ptr_ = Array<Index>(backend_, g.ptr);
  rg_node_ = Array<Index>(backend_, g.node);
  rg_ao_inv_ = Array<Scalar>(backend_, g.ao_inv);
  rg_arm_ = Array<Scalar>(backend_, g.arm);
  rg_kv_ = Array<Scalar>(backend_, g.kv);
  rg_d_ = Array<Scalar>(backend_, g.node.size());  // d_v: BuildOwnContacts, once the swept contacts are known
  rg_host_ = g;
  rg_inv_off_host_ = inv_off;
  groups_dirty_ = true;
}

void CondSolver::SetBarycentricNodes(const BarycentricNodes& bn) {
  const Index n = bn.size();
  CONDSIM_CHECK(bn.ptr.size() == std::size_t(n) + 1 && bn.ptr.front() == 0 && std::size_t(bn.ptr.back()) == bn.host.size() &&
                    bn.weight.size() == bn.host.size() && bn.kv.size() == std::size_t(n),
                "SetBarycentricNodes: inconsistent arrays");
  // hosts in ascending node order, each with its incidences in virtual-node order
  std::vector<Index> hosts = bn.host;
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  std::vector<Index> slot(bn.host.size()), hptr(hosts.size() + 1, 0);
  bary_max_node_ = -1;
  for (Index k = 0; k < n; ++k) {
    CONDSIM_CHECK(std::isfinite(bn.kv[k]) && bn.kv[k] > 0, "SetBarycentricNodes: kv of virtual node " << k << " must be > 0");
    CONDSIM_CHECK(bn.node[k] >= 0, "SetBarycentricNodes: negative node");
    bary_max_node_ = std::max(bary_max_node_, bn.node[k]);
    for (Index q = bn.ptr[k]; q < bn.ptr[k + 1]; ++q) {
      CONDSIM_CHECK(std::isfinite(bn.weight[q]) && bn.weight[q] >= 0, "SetBarycentricNodes: weights must be >= 0");
      bary_max_node_ = std::max(bary_max_node_, bn.host[q]);
      slot[q] = static_cast<Index>(std::lower_bound(hosts.begin(), hosts.end(), bn.host[q]) - hosts.begin());
      ++hptr[slot[q] + 1];
    }
  }
  for (std::size_t h = 0; h < hosts.size(); ++h) hptr[h + 1] += hptr[h];
  std::vector<Index> fill(hptr.begin(), hptr.end() - 1), hvn(bn.host.size());
  std::vector<Scalar> hw(bn.host.size()), hsum(hosts.size(), 0);
  for (Index k = 0; k < n; ++k)
    for (Index q = bn.ptr[k]; q < bn.ptr[k + 1]; ++q) {
      const Index e = fill[slot[q]]++;
      hvn[e] = k;
      hw[e] = bn.weight[q];
      hsum[slot[q]] += bn.weight[q];
    }
  num_bary_ = n;
  num_bary_hosts_ = static_cast<Index>(hosts.size());
  bn_node_ = Array<Index>(backend_, bn.node);
  bn_ptr_ = Array<Index>(backend_, bn.ptr);
  bn_host_ = Array<Index>(backend_, bn.host);
  bn_slot_ = Array<Index>(backend_, slot);
  bn_weight_ = Array<Scalar>(backend_, bn.weight);
  bn_kv_ = Array<Scalar>(backend_, bn.kv);
  bh_node_ = Array<Index>(backend_, hosts);
  bh_ptr_ = Array<Index>(backend_, hptr);
  bh_vn_ = Array<Index>(backend_, hvn);
  bh_w_ = Array<Scalar>(backend_, hw);
  bh_sum_host_ = hsum;
  bary_vnodes_host_ = bn.node;
  bary_hosts_host_ = hosts;
  groups_dirty_ = true;  // also marks the hosts as scalar-w nodes inside chains
  w_matrix_ = nullptr;   // the hosts' row sums change
}

void CondSolver::SetBodyModes(const BodyModes& modes) {
  CONDSIM_CHECK(!modes.ptr.empty() && modes.ptr.front() == 0 && std::size_t(modes.ptr.back()) == modes.node.size() &&
                    modes.arm.size() == 3 * modes.node.size(),
                "SetBodyModes: inconsistent arrays");
  for (std::size_t p = 0; p + 1 < modes.ptr.size(); ++p)
    CONDSIM_CHECK(modes.ptr[p + 1] >= modes.ptr[p], "SetBodyModes: decreasing ptr at patch " << p);
  CONDSIM_CHECK(modes.body_ptr.empty() || (modes.body_ptr.front() == 0 && modes.body_ptr.back() == modes.size() &&
                                           std::is_sorted(modes.body_ptr.begin(), modes.body_ptr.end())),
                "SetBodyModes: body_ptr must run from 0 to the number of patches");
  for (std::size_t k = 0; k < modes.node.size(); ++k)
    CONDSIM_CHECK(modes.node[k] >= 0, "SetBodyModes: negative node " << modes.node[k]);
  for (Scalar x : modes.arm) CONDSIM_CHECK(std::isfinite(x), "SetBodyModes: arms must be finite");
  modes_host_ = modes;
}

std::vector<Index> GridPatches(const std::vector<Scalar>& x, Index target) {
  const std::size_t n = x.size() / 3;
  std::vector<Index> patch(n, 0);
  target = std::min<Index>(target, static_cast<Index>(n) / (2 * kMinPatchPoints));
  if (target <= 1) return patch;
  Vec3 lo = LoadVec3(x.data(), 0), hi = lo;
  for (std::size_t i = 1; i < n; ++i)
    for (int d = 0; d < 3; ++d) {
      lo[d] = std::min(lo[d], x[3 * i + d]);
      hi[d] = std::max(hi[d], x[3 * i + d]);
    }
  // cells of size h from lo; the number of non-empty ones
  using Key = std::array<std::int64_t, 3>;
  auto key_of = [&](std::size_t i, Scalar h) {
    Key key;
    for (int d = 0; d < 3; ++d) key[d] = static_cast<std::int64_t>(std::floor((x[3 * i + d] - lo[d]) / h));
    return key;
  };
  std::map<Key, Index> cells;  // cell -> its point count
  auto assign = [&](Scalar h) {
    cells.clear();
    for (std::size_t i = 0; i < n; ++i) ++cells[key_of(i, h)];
    return static_cast<Index>(cells.size());
  };
  // bisection on h: hi_h leaves at most target cells (one cell spans the box), lo_h more
  Scalar hi_h = Scalar(1.001) * std::max({hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2], Scalar(1e-30)});
  Scalar lo_h = hi_h / Scalar(2 * target);
  while (assign(lo_h) <= target && lo_h > Scalar(1e-12) * hi_h) lo_h /= 2;
  while (hi_h - lo_h > Scalar(1e-3) * hi_h) {
    const Scalar mid = (lo_h + hi_h) / 2;
    (assign(mid) <= target ? hi_h : lo_h) = mid;
  }
  assign(hi_h);
  // cells with fewer than kMinPatchPoints points join the nearest larger cell (the first in cell
  // order on ties); the rest are numbered in cell order
  std::vector<Key> keys;
  std::vector<Index> size;
  for (const auto& [key, count] : cells) {
    keys.push_back(key);
    size.push_back(count);
  }
  std::vector<Index> id(keys.size(), -1);
  Index next = 0;
  for (std::size_t c = 0; c < keys.size(); ++c)
    if (size[c] >= kMinPatchPoints) id[c] = next++;
  if (next == 0) return patch;
  for (std::size_t c = 0; c < keys.size(); ++c) {
    if (id[c] >= 0 || size[c] >= kMinPatchPoints) continue;
    std::int64_t best = -1;
    std::size_t best_cell = 0;
    for (std::size_t o = 0; o < keys.size(); ++o) {
      if (size[o] < kMinPatchPoints) continue;
      std::int64_t dist = 0;
      for (int d = 0; d < 3; ++d) dist += (keys[o][d] - keys[c][d]) * (keys[o][d] - keys[c][d]);
      if (best < 0 || dist < best) {
        best = dist;
        best_cell = o;
      }
    }
    id[c] = id[best_cell];
  }
  for (std::size_t i = 0; i < n; ++i) {
    const Key key = key_of(i, hi_h);
    patch[i] = id[std::size_t(std::lower_bound(keys.begin(), keys.end(), key) - keys.begin())];
  }
  return patch;
}

void AppendBodyPatches(const std::vector<Index>& patch, const std::vector<Scalar>& x, Index first, BodyModes* modes) {
  CONDSIM_CHECK(x.size() == 3 * patch.size(), "AppendBodyPatches: " << x.size() << " coordinates for " << patch.size() << " nodes");
  if (modes->body_ptr.empty()) modes->body_ptr.push_back(0);
  const Index count = static_cast<Index>(patch.size());
  const Index num_patches = count == 0 ? 0 : *std::max_element(patch.begin(), patch.end()) + 1;
  // nodes grouped by patch (counting sort keeps node order within a patch)
  std::vector<Index> start(std::size_t(num_patches) + 1, 0);
  for (Index p : patch) {
    CONDSIM_CHECK(p >= 0, "AppendBodyPatches: negative patch " << p);
    ++start[std::size_t(p) + 1];
  }
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<Index> order(static_cast<std::size_t>(count));
  std::vector<Index> fill(start.begin(), start.end() - 1);
  for (Index i = 0; i < count; ++i) order[std::size_t(fill[std::size_t(patch[i])]++)] = i;
  for (Index p = 0; p < num_patches; ++p) {
    Vec3 centre;
    for (Index k = start[p]; k < start[p + 1]; ++k) centre += LoadVec3(x.data(), order[k]);
    centre = centre / Scalar(std::max<Index>(start[p + 1] - start[p], 1));
    for (Index k = start[p]; k < start[p + 1]; ++k) {
      modes->node.push_back(first + order[k]);
      const Vec3 arm = LoadVec3(x.data(), order[k]) - centre;
      for (int d = 0; d < 3; ++d) modes->arm.push_back(arm[d]);
    }
    modes->ptr.push_back(static_cast<Index>(modes->node.size()));
  }
  modes->body_ptr.push_back(modes->size());
}

void CondSolver::PrepareBodyModes(DeviceBlockMatrix& a) {
  // with the Frobenius W only (a Barzilai-Borwein step reads r, which the correction changes)
  num_modes_ = 0;
  if (!params_.body_modes || params_.step_size != StepSize::kFrobenius || modes_host_.size() == 0) return;
  // the patches less their contact nodes (and the hosts of barycentric nodes in contact): the
  // modes then never move a contact node, so the contact step (Alg. 2) is unchanged
  std::vector<unsigned char> excluded = in_contact_host_;  // contact nodes and barycentric hosts (Prepare)
  for (const auto* list : {&bary_vnodes_host_, &rg_host_.node})
    for (Index k : *list)
      if (k < nodes_) excluded[k] = 1;
  const Index num_bodies = modes_host_.body_ptr.empty() ? modes_host_.size() : Index(modes_host_.body_ptr.size()) - 1;
  BodyModes used;
  used.body_ptr.push_back(0);
  std::vector<Index> node_patch(std::size_t(nodes_), -1), slot(std::size_t(nodes_), -1), patch_body;
  std::vector<unsigned char> seen(std::size_t(nodes_), 0);
  for (Index body = 0; body < num_bodies; ++body) {
    const Index p0 = modes_host_.body_ptr.empty() ? body : modes_host_.body_ptr[body];
    const Index p1 = modes_host_.body_ptr.empty() ? body + 1 : modes_host_.body_ptr[body + 1];
    for (Index p = p0; p < p1; ++p) {
      const Index start = static_cast<Index>(used.node.size());
      for (Index q = modes_host_.ptr[p]; q < modes_host_.ptr[p + 1]; ++q) {
        const Index i = modes_host_.node[q];
        CONDSIM_CHECK(i < nodes_, "SetBodyModes: node " << i << " is not a node of A (" << nodes_ << " nodes)");
        CONDSIM_CHECK(!seen[i], "SetBodyModes: node " << i << " is in more than one patch");
        seen[i] = 1;
        if (excluded[i]) continue;
        used.node.push_back(i);
        for (int d = 0; d < 3; ++d) used.arm.push_back(modes_host_.arm[3 * std::size_t(q) + d]);
      }
      // fewer than 4 nodes: rotations degenerate, left out
      if (static_cast<Index>(used.node.size()) - start < kMinPatchNodes) {
        used.node.resize(std::size_t(start));
        used.arm.resize(3 * std::size_t(start));
        continue;
      }
      const Index patch = used.size();
      for (Index q = start; q < static_cast<Index>(used.node.size()); ++q) {
        node_patch[used.node[q]] = patch;
        slot[used.node[q]] = q;
      }
      used.ptr.push_back(static_cast<Index>(used.node.size()));
      patch_body.push_back(static_cast<Index>(used.body_ptr.size()) - 1);
    }
    if (used.size() > used.body_ptr.back()) used.body_ptr.push_back(used.size());
  }
  num_modes_ = used.size();
  if (num_modes_ == 0) return;
  listed_modes_ = static_cast<Index>(used.node.size());
  // per listed node, the patches (of its body) its row of A reaches; per body, its dense A_c
  const BlockPattern& pattern = a.pattern();
  std::vector<Index> t_ptr{0}, t_patch, c_off{0};
  for (Index q = 0; q < listed_modes_; ++q) {
    const Index i = used.node[q], body = patch_body[std::size_t(node_patch[i])];
    const Index first = t_ptr.back();
    for (Index k = pattern.row_ptr[i]; k < pattern.row_ptr[i + 1]; ++k) {
      const Index p = node_patch[pattern.col_idx[k]];
      if (p < 0 || patch_body[std::size_t(p)] != body) continue;
      if (std::find(t_patch.begin() + first, t_patch.end(), p) == t_patch.end()) t_patch.push_back(p);
    }
    t_ptr.push_back(static_cast<Index>(t_patch.size()));
  }
  const Index bodies = static_cast<Index>(used.body_ptr.size()) - 1;
  for (Index body = 0; body < bodies; ++body) {
    const Index ld = 6 * (used.body_ptr[body + 1] - used.body_ptr[body]);
    CONDSIM_CHECK(std::int64_t(c_off.back()) + std::int64_t(ld) * ld < std::numeric_limits<Index>::max(),
                  "COND: the body modes' coarse matrices exceed " << std::numeric_limits<Index>::max()
                                                                 << " entries; lower body_mode_patches");
    c_off.push_back(c_off.back() + ld * ld);
  }
  bm_ptr_ = Array<Index>(backend_, used.ptr);
  bm_node_ = Array<Index>(backend_, used.node);
  bm_arm_ = Array<Scalar>(backend_, used.arm);
  bm_node_patch_ = Array<Index>(backend_, node_patch);
  bm_node_slot_ = Array<Index>(backend_, slot);
  bm_patch_body_ = Array<Index>(backend_, patch_body);
  bm_body_ptr_ = Array<Index>(backend_, used.body_ptr);
  bm_c_off_ = Array<Index>(backend_, c_off);
  bm_t_ptr_ = Array<Index>(backend_, t_ptr);
  bm_t_patch_ = Array<Index>(backend_, t_patch);
  if (bm_t_.size() < 18 * t_ptr.back()) bm_t_ = Array<Scalar>(backend_, 18 * t_ptr.back());
  if (bm_ac_.size() != c_off.back()) bm_ac_ = Array<Scalar>(backend_, c_off.back());
  if (bm_dv_.size() != 6 * num_modes_) {
    bm_g_ = Array<Scalar>(backend_, 6 * num_modes_);
    bm_dv_ = Array<Scalar>(backend_, 6 * num_modes_);
  }
  if (v_keep_.size() != 3 * nodes_) v_keep_ = Array<Scalar>(backend_, 3 * nodes_);
  // T = A Z per listed node, A_c = Z^T A Z per body; the inverses on the host (a body whose A_c
  // is not positive definite gets no correction)
  const BodyModeView view = ModeView();
  kernels_->BodyModeProduct(listed_modes_, BodyModeProductOp{view, a.row_ptr().data(), a.col_idx().data(), a.values().data(), bm_t_.data()});
  kernels_->BodyModeMatrix(num_modes_, BodyModeMatrixOp{view, bm_t_.data(), bm_ac_.data()});
  std::vector<Scalar> ac = bm_ac_.ToHost();
  for (Index body = 0; body < bodies; ++body) {
    const Index ld = 6 * (used.body_ptr[body + 1] - used.body_ptr[body]);
    using MatX = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;
    using VecX = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;
    Eigen::Map<Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> m(ac.data() + c_off[body], ld, ld);
    const MatX sym = Scalar(0.5) * (m + m.transpose());
    const VecX d = sym.diagonal();
    if (!sym.allFinite() || (d.array() <= 0).any()) {
      m.setZero();
      continue;
    }
    // S = D^-1/2 A_c D^-1/2 (unit diagonal) + 1e-10 I: a patch's degenerate direction (e.g. the
    // rotation about the line of collinear nodes) gets a bounded, negligible correction
    const VecX s = d.array().rsqrt();
    MatX scaled = s.asDiagonal() * sym * s.asDiagonal();
    scaled.diagonal().array() += Scalar(kPatchRegularization);
    const Eigen::LLT<MatX> llt(scaled);
    if (llt.info() != Eigen::Success) {
      m.setZero();
      continue;
    }
    // A_c^-1 = D^-1/2 L^-T L^-1 D^-1/2
    MatX l_inv = MatX::Identity(ld, ld);
    llt.matrixL().solveInPlace(l_inv);
    m = s.asDiagonal() * (l_inv.transpose() * l_inv) * s.asDiagonal();
    if (!m.allFinite()) m.setZero();
  }
  bm_ac_.CopyFromHost(ac);
}

BodyModeView CondSolver::ModeView() const {
  return BodyModeView{bm_ptr_.data(),        bm_node_.data(),     bm_arm_.data(),   bm_node_patch_.data(),
                      bm_node_slot_.data(),  bm_patch_body_.data(), bm_body_ptr_.data(), bm_c_off_.data(),
                      bm_t_ptr_.data(),      bm_t_patch_.data()};
}

void CondSolver::ApplyBodyModes(Array<Scalar>* v) {
  const BodyModeView view = ModeView();
  kernels_->BodyModeResidual(num_modes_, BodyModeResidualOp{view, r_.data(), node_env_.data(), env_active_.data(), bm_g_.data()});
  kernels_->BodyModeSolve(6 * num_modes_, BodyModeSolveOp{view, bm_ac_.data(), bm_g_.data(), bm_dv_.data()});
  kernels_->BodyModeApply(listed_modes_, BodyModeApplyOp{view, bm_t_.data(), bm_dv_.data(), v->data(), r_.data()});
}

void CondSolver::SetContacts(const ContactSet& contacts) {
  contacts_host_ = contacts;
  Index max_node = -1;
  for (Index i : contacts.node_i) max_node = std::max(max_node, i);
  for (Index j : contacts.node_j) max_node = std::max(max_node, j);
  CONDSIM_CHECK(contacts.node_i.size() == contacts.node_j.size() &&
                    contacts.frame.size() == 9 * contacts.node_i.size(),
                "contacts: arrays have inconsistent lengths");
  const ContactColoring coloring = ColorContacts(contacts, max_node + 1);
  color_ptr_ = coloring.color_ptr;
  color_order_host_ = coloring.order;
  Backend* b = backend_;
  ci_ = Array<Index>(b, contacts.node_i);
  cj_ = Array<Index>(b, contacts.node_j);
  cenv_ = Array<Index>(b, contacts.env);
  order_ = Array<Index>(b, coloring.order);
  frame_ = Array<Scalar>(b, contacts.frame);
  phi_ = Array<Scalar>(b, contacts.phi);
  mu1_ = Array<Scalar>(b, contacts.mu1);
  mu2_ = Array<Scalar>(b, contacts.mu2);
  lambda_ = Array<Scalar>(b, std::vector<Scalar>(contacts.frame.size() / 3, Scalar(0)));
  groups_dirty_ = true;
}

void CondSolver::SetImpulses(const std::vector<Scalar>& lambda) {
  CONDSIM_CHECK(lambda.size() == std::size_t(3) * contacts_host_.node_i.size(),
                "SetImpulses: got " << lambda.size() << " values for " << contacts_host_.size()
                                    << " contacts (3 each)");
  for (std::size_t k = 0; k < lambda.size(); ++k) {
    CONDSIM_CHECK(std::isfinite(lambda[k]), "SetImpulses: value " << k << " is not finite");
  }
  lambda_.CopyFromHost(lambda);
}

std::vector<Scalar> CondSolver::Impulses() const { return lambda_.ToHost(); }

void CondSolver::SetChains(const std::vector<Index>& ptr, const std::vector<Index>& nodes, Index band) {
  CONDSIM_CHECK(ptr.empty() || (ptr.front() == 0 && std::size_t(ptr.back()) == nodes.size()),
                "SetChains: ptr must start at 0 and end at the number of chain nodes (" << nodes.size() << ")");
  for (std::size_t c = 1; c < ptr.size(); ++c) CONDSIM_CHECK(ptr[c - 1] < ptr[c], "SetChains: chain " << c - 1 << " is empty");
  CONDSIM_CHECK(band >= 1 || nodes.empty(), "SetChains: band must be >= 1 node, got " << band);
  std::vector<Index> sorted = nodes;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t k = 0; k < sorted.size(); ++k) {
    CONDSIM_CHECK(sorted[k] >= 0, "SetChains: negative node " << sorted[k]);
    CONDSIM_CHECK(k == 0 || sorted[k] != sorted[k - 1], "SetChains: node " << sorted[k] << " is in more than one chain");
  }
  chain_ptr_host_ = ptr.size() > 1 ? ptr : std::vector<Index>();
  chain_nodes_host_ = nodes;
  chain_band_ = band;
  chains_dirty_ = true;
}

// sizes the per-node arrays for A, validates the contacts against the node environments
void CondSolver::Prepare(DeviceBlockMatrix& a) {
  const BlockPattern& p = a.pattern();
  CONDSIM_CHECK(p.block_dim == 3 && p.block_rows == p.block_cols,
                "COND needs a square matrix of 3x3 node blocks, got " << p.block_rows << " x "
                                                                      << p.block_cols << " blocks of size " << p.block_dim);
  const Index nodes = p.block_rows;
  if (node_env_host_.empty()) node_env_host_.assign(std::size_t(nodes), 0);
  CONDSIM_CHECK(node_env_host_.size() == std::size_t(nodes),
                "node environments given for " << node_env_host_.size() << " nodes, the matrix has " << nodes);
  if (nodes != nodes_) {
    nodes_ = nodes;
    Backend* b = backend_;
    const Index n = 3 * nodes;
    num_envs_ = nodes > 0 ? node_env_host_.back() + 1 : 1;
    std::vector<Index> dof_offsets(std::size_t(num_envs_) + 1, 0);
    for (Index e : node_env_host_) dof_offsets[std::size_t(e) + 1] += 3;
    for (Index e = 0; e < num_envs_; ++e) dof_offsets[e + 1] += dof_offsets[e];
    node_env_ = Array<Index>(b, node_env_host_);
    dof_offsets_ = Array<Index>(b, dof_offsets);
    for (Array<Scalar>* x : {&w_, &r_, &r_prev_, &u_, &v_prev_, &diff_, &f_, &f_new_}) *x = Array<Scalar>(b, n);
    diag_sum_ = Array<Scalar>(b, nodes);
    row_norm2_ = Array<Scalar>(b, nodes);
    row_abs_ = Array<Scalar>(b, nodes);
    env_scalar_ = Array<Scalar>(b, num_envs_);
    env_theta2_ = Array<Scalar>(b, num_envs_);
    env_active_ = Array<unsigned char>(b, num_envs_);
    w_matrix_ = nullptr;
    groups_dirty_ = true;
  }
  if (groups_dirty_) {
    contacts_host_.Validate(node_env_host_, params_.projection == Projection::kProximal);
    // union-find over D-contacts: linked nodes share one Frobenius w (Sec. IV-C1)
    std::vector<Index> parent(static_cast<std::size_t>(nodes_));
    std::iota(parent.begin(), parent.end(), 0);
    auto find = [&](Index x) {
      while (parent[x] != x) x = parent[x] = parent[parent[x]];
      return x;
    };
    // virtual nodes with their own Gamma (rigid groups, barycentric nodes) stay out: merging
    // them would give their partner a w of order 1 / kv
    std::vector<unsigned char> own_gamma(static_cast<std::size_t>(nodes_), 0);
    for (const auto* list : {&rg_host_.node, &bary_vnodes_host_})
      for (Index k : *list)
        if (k < nodes_) own_gamma[k] = 1;
    for (Index m = 0; m < contacts_host_.size(); ++m) {
      const Index i = contacts_host_.node_i[m], j = contacts_host_.node_j[m];
      if (j >= 0 && !own_gamma[i] && !own_gamma[j]) {
        const Index ri = find(i), rj = find(j);
        if (ri != rj) parent[std::max(ri, rj)] = std::min(ri, rj);
      }
    }
    // groups in order of their smallest node, nodes ascending within a group
    std::vector<Index> group_of(std::size_t(nodes_), -1), count;
    for (Index k = 0; k < nodes_; ++k) {
      const Index root = find(k);
      if (group_of[root] < 0) {
        group_of[root] = static_cast<Index>(count.size());
        count.push_back(0);
      }
      group_of[k] = group_of[root];
      ++count[group_of[k]];
    }
    std::vector<Index> ptr(count.size() + 1, 0), members(static_cast<std::size_t>(nodes_));
    for (std::size_t g = 0; g < count.size(); ++g) ptr[g + 1] = ptr[g] + count[g];
    std::vector<Index> fill(ptr.begin(), ptr.end() - 1);
    for (Index k = 0; k < nodes_; ++k) members[fill[group_of[k]]++] = k;
    num_groups_ = static_cast<Index>(count.size());
    group_ptr_ = Array<Index>(backend_, ptr);
    group_nodes_ = Array<Index>(backend_, members);
    // contact nodes keep the scalar w inside chains
    std::vector<unsigned char> contact(static_cast<std::size_t>(nodes_), 0);
    for (Index m = 0; m < contacts_host_.size(); ++m) {
      contact[contacts_host_.node_i[m]] = 1;
      if (contacts_host_.node_j[m] >= 0) contact[contacts_host_.node_j[m]] = 1;
    }
    for (Index h : bary_hosts_host_)
      if (h < nodes_) contact[h] = 1;
    // a host's load in the virtual nodes' Gamma: its weights S_a plus its direct contacts (the
    // row-sum majorant of the Delassus coupling through that host)
    if (num_bary_ > 0) {
      std::vector<Scalar> load = bh_sum_host_;
      for (Index m = 0; m < contacts_host_.size(); ++m)
        for (Index node : {contacts_host_.node_i[m], contacts_host_.node_j[m]}) {
          auto it = std::lower_bound(bary_hosts_host_.begin(), bary_hosts_host_.end(), node);
          if (node >= 0 && it != bary_hosts_host_.end() && *it == node) load[it - bary_hosts_host_.begin()] += 1;
        }
      bh_load_ = Array<Scalar>(backend_, load);
    }
    in_contact_ = Array<unsigned char>(backend_, contact);
    in_contact_host_ = std::move(contact);
    BuildOwnContacts();
    groups_dirty_ = false;
  }
  if (!chain_ptr_host_.empty() && (chains_dirty_ || chain_matrix_ != &a)) {
    CONDSIM_CHECK(params_.step_size == StepSize::kFrobenius, "COND: chains need the Frobenius step size");
    const Index band = chain_band_, chains = static_cast<Index>(chain_ptr_host_.size()) - 1;
    std::vector<Index> band_block(chain_nodes_host_.size() * std::size_t(band + 1), -1), offset(static_cast<std::size_t>(chains) + 1, 0);
    for (Index c = 0; c < chains; ++c) {
      for (Index g = chain_ptr_host_[c]; g < chain_ptr_host_[c + 1]; ++g) {
        CONDSIM_CHECK(chain_nodes_host_[g] < nodes_, "SetChains: node " << chain_nodes_host_[g] << " is not a node of A");
        for (Index d = 0; d <= band && g - d >= chain_ptr_host_[c]; ++d)
          band_block[std::size_t(g) * (band + 1) + d] = p.Find(chain_nodes_host_[g], chain_nodes_host_[g - d]);
      }
      const std::size_t len = 3 * std::size_t(chain_ptr_host_[c + 1] - chain_ptr_host_[c]);
      offset[c + 1] = CheckedIndex(std::size_t(offset[c]) + len * std::size_t(ChainBandwidth(band) + 1), "chain factor size");
    }
    chain_ptr_ = Array<Index>(backend_, chain_ptr_host_);
    chain_nodes_ = Array<Index>(backend_, chain_nodes_host_);
    band_block_ = Array<Index>(backend_, band_block);
    factor_offset_ = Array<Index>(backend_, offset);
    factor_ = Array<Scalar>(backend_, offset.back());
    chain_ok_ = Array<unsigned char>(backend_, chains);
    d_ = Array<Scalar>(backend_, 3 * nodes_);
    chain_matrix_ = &a;
    chains_dirty_ = false;
  }
}

void CondSolver::RigidGammaBounds(const std::vector<unsigned char>& swept) {
  // d_v: the largest absolute row sum of J A_o^-1 J^T + I / kv (the group's Delassus block with
  // eq. 15's damper; a Gershgorin majorant for the Gamma of eq. 25) over the virtual nodes solved
  // together with v. A node whose contacts the diagonal solve takes (a Jacobi step, all at once)
  // sums over the group's other such nodes only: the swept nodes' impulses stay fixed during
  // the diagonal solve, and the sweep answers them exactly afterwards. A swept node keeps the
  // sum over the whole group (with only its own block the sweeps stalled on the soft gripper).
  const RigidGroups& g = rg_host_;
  auto jac = [&](Index e) {  // 3x6 J = [I, -[r]x]
    const Mat3 sk = Scalar(-1) * Skew(LoadVec3(g.arm.data(), e));
    std::array<Scalar, 18> j{};
    for (int r = 0; r < 3; ++r) {
      j[6 * r + r] = 1;
      for (int c = 0; c < 3; ++c) j[6 * r + 3 + c] = sk(r, c);
    }
    return j;
  };
  std::vector<Scalar> d(g.node.size(), 0);
  for (Index k = 0; k < num_rigid_; ++k) {
    const Scalar* m = g.ao_inv.data() + rg_inv_off_host_[k];
    const Index first = g.body_ptr[k], size = g.body_ptr[k + 1] - first, dim = 6 * size;
    for (Index ba = first; ba < first + size; ++ba)
      for (Index a = g.ptr[ba]; a < g.ptr[ba + 1]; ++a) {
        const auto ja = jac(a);
        Scalar rows[3] = {1 / g.kv[a], 1 / g.kv[a], 1 / g.kv[a]};
        for (Index bb = first; bb < first + size; ++bb) {
          // J_a A_o^-1 restricted to body bb's columns
          Scalar ja_m[18] = {};
          for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 6; ++c)
              for (int q = 0; q < 6; ++q) ja_m[6 * r + c] += ja[6 * r + q] * m[(6 * (ba - first) + q) * dim + 6 * (bb - first) + c];
          for (Index e = g.ptr[bb]; e < g.ptr[bb + 1]; ++e) {
            if (!swept[a] && swept[e]) continue;
            const auto jb = jac(e);
            for (int r = 0; r < 3; ++r)
              for (int c = 0; c < 3; ++c) {
                Scalar gv = 0;
                for (int q = 0; q < 6; ++q) gv += ja_m[6 * r + q] * jb[6 * c + q];
                rows[r] += std::fabs(gv);
              }
          }
        }
        d[a] = std::max(rows[0], std::max(rows[1], rows[2]));
      }
  }
  rg_d_.CopyFromHost(d);
}

void CondSolver::BuildOwnContacts() {
  const Index nc = contacts_host_.size();
  std::vector<unsigned char> own(std::size_t(nc), 0);
  // per group: (contact, virtual-node slot)
  std::vector<std::vector<std::pair<Index, Index>>> lists(static_cast<std::size_t>(num_rigid_));
  if (params_.rigid_sweeps > 0 && num_rigid_ > 0) {
    std::vector<Index> slot_of(std::size_t(nodes_), -1), count(std::size_t(nodes_), 0), claim(std::size_t(nodes_), -1);
    for (std::size_t e = 0; e < rg_host_.node.size(); ++e)
      if (rg_host_.node[e] < nodes_) slot_of[rg_host_.node[e]] = static_cast<Index>(e);
    for (Index m = 0; m < nc; ++m) {
      ++count[contacts_host_.node_i[m]];
      if (contacts_host_.node_j[m] >= 0) ++count[contacts_host_.node_j[m]];
    }
    for (Index m = 0; m < nc; ++m) {
      const Index i = contacts_host_.node_i[m], j = contacts_host_.node_j[m];
      const Index si = slot_of[i], sj = j >= 0 ? slot_of[j] : -1;
      // one rigid virtual node against a node of a deformable body (an FEM or cable node, or a
      // barycentric virtual node on a triangle or segment); two rigid bodies stay with the
      // diagonal solve
      if ((si >= 0) == (sj >= 0)) continue;
      const Index e = si >= 0 ? si : sj, other = si >= 0 ? j : i;
      // the static world stays with the diagonal solve: it has no compliance of its own, so a
      // body on several supports is indeterminate up to 1 / kv, and repeated sweeps there cost
      // iterations at tight theta (welded pair sliding at 1e-10: 87 per step become 2789)
      if (count[rg_host_.node[e]] != 1 || other < 0) continue;
      // the other node belongs to one group's sweep (the groups run in parallel)
      const Index grp = rg_slot_group_host_[e];
      if (claim[other] >= 0 && claim[other] != grp) continue;
      claim[other] = grp;
      own[m] = 1;
      lists[grp].emplace_back(m, e);
    }
    // a group with any other contact left to the diagonal solve but the static world's (another
    // group, a node another group sweeps, a virtual node with two contacts) keeps the diagonal
    // solve for all its contacts: sweeping the rest while some take Jacobi steps let the soft
    // gripper's cube corners (on Jacobi steps) sink into the fingers twice as deep (0.27 against
    // 0.15 mm)
    std::vector<unsigned char> mixed(std::size_t(num_rigid_), 0);
    for (Index m = 0; m < nc; ++m) {
      const Index i = contacts_host_.node_i[m], j = contacts_host_.node_j[m];
      if (own[m] || j < 0) continue;
      for (Index k : {i, j})
        if (slot_of[k] >= 0) mixed[rg_slot_group_host_[slot_of[k]]] = 1;
    }
    for (Index grp = 0; grp < num_rigid_; ++grp) {
      if (!mixed[grp]) continue;
      for (const auto& entry : lists[grp]) own[entry.first] = 0;
      lists[grp].clear();
    }
  }
  std::vector<unsigned char> swept(rg_host_.node.size(), 0);
  for (const auto& list : lists)
    for (const auto& entry : list) swept[std::size_t(entry.second)] = 1;
  if (num_rigid_ > 0) RigidGammaBounds(swept);
  std::vector<Index> ptr{0}, contact, slot, body;
  for (const auto& list : lists) {
    for (const auto& [m, e] : list) {
      contact.push_back(m);
      slot.push_back(e);
      body.push_back(rg_slot_body_host_[e]);
    }
    ptr.push_back(static_cast<Index>(contact.size()));
  }
  num_own_contacts_ = static_cast<Index>(contact.size());
  if (num_own_contacts_ == 0) return;  // Solve sweeps every contact in order_
  rc_ptr_ = Array<Index>(backend_, ptr);
  rc_contact_ = Array<Index>(backend_, contact);
  rc_slot_ = Array<Index>(backend_, slot);
  rc_body_ = Array<Index>(backend_, body);
  // the diagonal sweeps: every color less the own contacts
  std::vector<Index> order;
  sweep_color_ptr_.assign(1, 0);
  for (std::size_t c = 0; c + 1 < color_ptr_.size(); ++c) {
    for (Index k = color_ptr_[c]; k < color_ptr_[c + 1]; ++k)
      if (!own[color_order_host_[k]]) order.push_back(color_order_host_[k]);
    sweep_color_ptr_.push_back(static_cast<Index>(order.size()));
  }
  sweep_order_ = Array<Index>(backend_, order);
}

void CondSolver::ComputeStepMatrix(DeviceBlockMatrix& a) {
  // A's per-node sums are reused for w_reuse_solves solves of the same matrix object
  if (w_matrix_ != &a || solves_since_w_ >= params_.w_reuse_solves) {
    kernels_->FrobeniusNodes(nodes_, a.row_ptr().data(), a.col_idx().data(), a.values().data(),
                             diag_sum_.data(), row_norm2_.data(), row_abs_.data());
    // hosts of barycentric nodes: the rows of A_o
    if (num_bary_ > 0)
      kernels_->BarycentricFrobenius(num_bary_hosts_, BarycentricFrobeniusOp{BaryView(), a.row_ptr().data(), a.col_idx().data(),
                                                                             a.values().data(), diag_sum_.data(), row_norm2_.data(), row_abs_.data()});
    w_matrix_ = &a;
    solves_since_w_ = 0;
  }
  ++solves_since_w_;
  kernels_->FrobeniusGroups(num_groups_, group_ptr_.data(), group_nodes_.data(), diag_sum_.data(), row_norm2_.data(),
                            row_abs_.data(), static_cast<Scalar>(params_.w_safeguard), w_.data());
  // rigid groups: Gamma = d_v on their virtual nodes
  if (num_rigid_ > 0) kernels_->SetNodeScalar(rg_node_.size(), SetNodeScalarOp{rg_node_.data(), rg_d_.data(), w_.data()});
  // barycentric nodes: Gamma from their hosts' w
  if (num_bary_ > 0) kernels_->BarycentricGamma(num_bary_, BarycentricGammaOp{BaryView(), w_.data()});
}

void CondSolver::OwnGammaResponse(const Array<Scalar>& b, bool before_sweep) {
  if (num_rigid_ == 0 && num_bary_ == 0) return;
  // f: contact forces before the sweeps, f_new after them (the hosts take the difference)
  Array<Scalar>& f = before_sweep ? f_ : f_new_;
  backend_->Fill(0, &f);
  AddContactForces(nullptr, lambda_, &f);
  if (num_bary_ > 0) {
    kernels_->BarycentricHost(num_bary_hosts_, BarycentricHostOp{BaryView(), r_.data(), f_.data(), f.data(), w_.data(), before_sweep, u_.data()});
    kernels_->BarycentricNode(num_bary_, BarycentricNodeOp{BaryView(), f.data(), w_.data(), before_sweep, u_.data()});
  }
  if (num_rigid_ > 0) kernels_->RigidResponse(num_rigid_, RigidResponseOp{RigidView(), b.data(), f.data(), w_.data(), before_sweep, u_.data()});
}

RigidGroupView CondSolver::RigidView() const {
  return RigidGroupView{rg_body_ptr_.data(), rg_inv_off_.data(), rg_trans_.data(), rg_rot_.data(), rg_ao_inv_.data(),
                        rg_ptr_.data(),      rg_node_.data(),     rg_arm_.data(),   rg_kv_.data()};
}

BarycentricView CondSolver::BaryView() const {
  return BarycentricView{bn_node_.data(), bn_ptr_.data(), bn_host_.data(), bn_weight_.data(), bn_slot_.data(), bn_kv_.data(),
                         bh_node_.data(), bh_ptr_.data(), bh_vn_.data(), bh_w_.data(), bh_load_.data()};
}

void CondSolver::AddContactForces(const Scalar* weights, const Array<Scalar>& lambda,
                                  Array<Scalar>* out) {
  const ContactView view{ci_.data(), cj_.data(), frame_.data(), phi_.data(), mu1_.data(), mu2_.data(), cenv_.data()};
  for (std::size_t c = 0; c + 1 < color_ptr_.size(); ++c) {
    kernels_->ApplyImpulses(view, order_.data(), color_ptr_[c], color_ptr_[c + 1] - color_ptr_[c],
                            weights, lambda.data(), out->data());
  }
}

CondStats CondSolver::Solve(DeviceBlockMatrix& a, const Array<Scalar>& b, Array<Scalar>* v) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  Prepare(a);
  const Index n = 3 * nodes_;
  CONDSIM_CHECK(b.size() == n && v->size() == n,
                "COND: b has " << b.size() << " and v has " << v->size() << " entries, A has " << n << " rows");
  Backend& be = *backend_;
  CONDSIM_CHECK(num_rigid_ == 0 || rg_max_node_ < nodes_,
                "COND: rigid group node " << rg_max_node_ << " is not a node of A (" << nodes_ << " nodes)");
  CONDSIM_CHECK((num_rigid_ == 0 && num_bary_ == 0) || params_.step_size == StepSize::kFrobenius,
                "COND: rigid groups and barycentric nodes need the Frobenius step size");
  CONDSIM_CHECK(num_bary_ == 0 || bary_max_node_ < nodes_,
                "COND: barycentric node or host " << bary_max_node_ << " is not a node of A (" << nodes_ << " nodes)");
  ComputeStepMatrix(a);
  PrepareBodyModes(a);
  const bool chains = !chain_ptr_host_.empty();
  const Index num_chains = chains ? static_cast<Index>(chain_ptr_host_.size()) - 1 : 0;
  const ChainView chain_view{chain_ptr_.data(), chain_nodes_.data(), band_block_.data(), factor_offset_.data(),
                             in_contact_.data(), chain_band_};
  if (chains) kernels_->ChainFactor(num_chains, ChainFactorOp{chain_view, a.values().data(), factor_.data(), chain_ok_.data()});

  const Index ne = num_envs_;
  std::vector<unsigned char> active(std::size_t(ne), 1);
  env_active_.CopyFromHost(active);
  CondStats st;
  st.num_contacts = contacts_host_.size();
  st.num_colors = static_cast<Index>(color_ptr_.size()) - 1;
  st.env_iterations.assign(std::size_t(ne), 0);
  st.env_residual.assign(std::size_t(ne), 0.0);
  const ContactView view{ci_.data(), cj_.data(), frame_.data(), phi_.data(), mu1_.data(), mu2_.data(), cenv_.data()};
  const bool bb = params_.step_size != StepSize::kFrobenius;
  std::vector<double> theta_prev(std::size_t(ne), 0), rho(std::size_t(ne), 1), nu(std::size_t(ne), 1);
  std::vector<double> theta_min(std::size_t(ne), 0);  // smallest residual of the running semi-iteration
  std::vector<int> l_min(std::size_t(ne), 0);         // and its iteration
  std::vector<int> plain(std::size_t(ne), params_.chebyshev_start);  // plain iterations after a restart
  std::vector<int> cheb_start(std::size_t(ne), params_.chebyshev_start);
  std::vector<Scalar> host_scalar(static_cast<std::size_t>(ne));
  be.Synchronize();
  const auto t1 = Clock::now();
  st.setup_seconds = std::chrono::duration<double>(t1 - t0).count();

  int running = ne;
  for (int l = 0; l < params_.max_iterations && running > 0; ++l) {
    // r = A v - b
    a.Multiply(1, *v, 0, &r_);
    be.Axpby(-1, b, 1, &r_);
    // Barzilai-Borwein step per environment from s = v^l - v^{l-1}, z = A s = r^l - r^{l-1}
    if (bb && l >= 1) {
      be.Copy(*v, &diff_);
      be.Axpby(-1, v_prev_, 1, &diff_);  // s
      be.Axpby(1, r_, -1, &r_prev_);     // z (r_prev_ <- r - r_prev)
      be.SegmentedDot(diff_, diff_, dof_offsets_, &env_scalar_);
      const std::vector<Scalar> ss = env_scalar_.ToHost();
      be.SegmentedDot(diff_, r_prev_, dof_offsets_, &env_scalar_);
      const std::vector<Scalar> sz = env_scalar_.ToHost();
      be.SegmentedDot(r_prev_, r_prev_, dof_offsets_, &env_scalar_);
      const std::vector<Scalar> zz = env_scalar_.ToHost();
      const bool use_bb1 = params_.step_size == StepSize::kBB1 ||
                           (params_.step_size == StepSize::kBBAlternate && l % 2 == 1);
      for (Index e = 0; e < ne; ++e) {
        // a non-positive value keeps the environment's current W (curvature estimate unusable)
        const Scalar alpha = use_bb1 ? ss[e] / sz[e] : sz[e] / zz[e];
        host_scalar[e] = (std::isfinite(alpha) && alpha > 0 && sz[e] > 0) ? alpha : Scalar(-1);
      }
      env_scalar_.CopyFromHost(host_scalar);
      kernels_->EnvScalarToDof(n, node_env_.data(), env_scalar_.data(), w_.data());
    }
    if (bb) be.Copy(r_, &r_prev_);
    // body modes: the W step starts from a copy of v corrected in the bodies' rigid modes (v
    // itself stays v^l for Chebyshev and theta)
    const Array<Scalar>* start = v;
    if (num_modes_ > 0) {
      be.Copy(*v, &v_keep_);
      ApplyBodyModes(&v_keep_);
      start = &v_keep_;
    }
    // v* = v - W r (eq. 20); u = v* + W Jc^T lambda_prev, then the colored sweeps (Alg. 2, eq. 24)
    if (chains) {
      // W r with the chains' exact blocks, then v* = v - W r
      be.Multiply(w_, r_, &d_);
      kernels_->ChainApply(num_chains, ChainApplyOp{chain_view, factor_.data(), chain_ok_.data(), w_.data(), r_.data(), d_.data()});
      be.Copy(*start, &u_);
      be.Axpby(-1, d_, 1, &u_);
    } else {
      kernels_->FpiStep(n, start->data(), w_.data(), r_.data(), u_.data());
    }
    // virtual nodes with their own Gamma answer the current forces (less Gamma f, added back
    // with the impulses), and after the sweeps the new ones
    OwnGammaResponse(b, true);
    AddContactForces(w_.data(), lambda_, &u_);
    // the diagonal solve, then the rigid groups' own contacts by Gauss-Seidel from the forces
    // of the new impulses (a group's other contacts have moved it already)
    const bool own = num_own_contacts_ > 0;
    const std::vector<Index>& sweep_ptr = own ? sweep_color_ptr_ : color_ptr_;
    for (std::size_t c = 0; c + 1 < sweep_ptr.size(); ++c) {
      const Index count = sweep_ptr[c + 1] - sweep_ptr[c];
      if (count == 0) continue;
      kernels_->Sweep(view, (own ? sweep_order_ : order_).data(), sweep_ptr[c], count, w_.data(), env_active_.data(),
                      static_cast<Scalar>(params_.omega), params_.projection, lambda_.data(), u_.data());
    }
    if (own) {
      be.Fill(0, &f_new_);
      AddContactForces(nullptr, lambda_, &f_new_);
      const RigidContactView own{rc_ptr_.data(), rc_contact_.data(), rc_slot_.data(), rc_body_.data()};
      kernels_->RigidContactSweep(num_rigid_, RigidContactSweepOp{RigidView(), own, view, b.data(), f_new_.data(), w_.data(),
                                                                  env_active_.data(), static_cast<Scalar>(params_.omega),
                                                                  params_.projection, params_.rigid_sweeps,
                                                                  Scalar(kRigidSweepSettled * params_.theta_threshold),
                                                                  lambda_.data(), u_.data()});
    }
    OwnGammaResponse(b, false);
    // Chebyshev (Alg. 3 lines 7-8): nu from rho of the previous iteration; per environment it
    // starts at cheb_start[e] (l_s, moved on by a restart)
    if (params_.chebyshev && l >= params_.chebyshev_start) {
      for (Index e = 0; e < ne; ++e) {
        if (l < cheb_start[e]) {
          nu[e] = 1;
        } else {
          nu[e] = l == cheb_start[e] ? 2 / (2 - rho[e] * rho[e]) : 4 / (4 - rho[e] * rho[e] * nu[e]);
        }
        host_scalar[e] = static_cast<Scalar>(nu[e]);
      }
      env_scalar_.CopyFromHost(host_scalar);
      kernels_->Chebyshev(n, node_env_.data(), env_scalar_.data(),
                          static_cast<Scalar>(params_.chebyshev_relax), v->data(), v_prev_.data(), u_.data());
    }
    // theta_e = |v^{l+1} - v^l| per environment (Alg. 1 line 12)
    be.Copy(u_, &diff_);
    be.Axpby(-1, *v, 1, &diff_);
    be.SegmentedDot(diff_, diff_, dof_offsets_, &env_theta2_);
    const std::vector<Scalar> theta2 = env_theta2_.ToHost();
    bool changed = false;
    double worst = 0;
    for (Index e = 0; e < ne; ++e) {
      if (!active[e]) continue;
      const double theta = std::sqrt(double(theta2[e]));
      if (!std::isfinite(theta)) {
        // divergence: this environment keeps its last finite iterate, the others go on
        st.failed_envs.push_back(e);
        active[e] = 0;
        changed = true;
        --running;
        continue;
      }
      worst = std::max(worst, theta);
      st.env_iterations[e] = l + 1;
      st.env_residual[e] = theta;
      rho[e] = theta_prev[e] > 0 ? std::min(theta / theta_prev[e], 1.0) : 1.0;  // eq. 39
      // safeguard: an accelerated residual that grew to kChebyshevRestartGrowth times the
      // smallest of this semi-iteration, or found no new smallest in 2 l_s iterations (rho
      // over-estimated, e.g. at the rounding floor or while contacts switch), restarts it after
      // plain iterations (l_s, doubled at each restart); the ordinary chattering of an
      // accelerated residual does not
      if (params_.chebyshev && l >= cheb_start[e]) {
        if (l == cheb_start[e] || theta < theta_min[e]) {
          theta_min[e] = theta;
          l_min[e] = l;
        }
        if (theta > kChebyshevRestartGrowth * theta_min[e] || l - l_min[e] >= 2 * params_.chebyshev_start) {
          // each restart doubles the plain stretch before the next start (acceleration that keeps
          // failing fades out; the plain iteration converges, Prop. 3-6)
          plain[e] = std::min(2 * plain[e], params_.max_iterations);
          cheb_start[e] = l + 1 + plain[e];
          ++st.chebyshev_restarts;
        }
      }
      theta_prev[e] = theta;
    }
    if (changed) env_active_.CopyFromHost(active);
    kernels_->Commit(n, node_env_.data(), env_active_.data(), u_.data(), v->data(), v_prev_.data());
    if (params_.record_history) st.history.push_back(worst);
    // environments below theta_th stop (Alg. 1 line 13)
    changed = false;
    for (Index e = 0; e < ne; ++e) {
      if (active[e] && st.env_residual[e] < params_.theta_threshold) {
        active[e] = 0;
        changed = true;
        --running;
      }
    }
    if (changed) env_active_.CopyFromHost(active);
  }
  be.Synchronize();
  st.iterate_seconds = std::chrono::duration<double>(Clock::now() - t1).count();
  st.converged = st.failed_envs.empty();
  for (Index e = 0; e < ne; ++e) {
    st.iterations = std::max(st.iterations, st.env_iterations[e]);
    st.residual = std::max(st.residual, st.env_residual[e]);
    if (!(st.env_residual[e] < params_.theta_threshold)) st.converged = false;
  }
  return st;
}

double CondSolver::ConsistencyResidual(DeviceBlockMatrix& a, const Array<Scalar>& b,
                                       const Array<Scalar>& v) {
  Prepare(a);
  Backend& be = *backend_;
  // r = A v - b - Jc^T lambda (eq. 1)
  be.Fill(0, &diff_);
  AddContactForces(nullptr, lambda_, &diff_);
  a.Multiply(1, v, 0, &r_);
  be.Axpby(-1, b, 1, &r_);
  be.Axpby(-1, diff_, 1, &r_);
  return double(be.Norm2(r_)) / std::max(double(be.Norm2(b)), 1e-300);
}

}  // namespace condsim
