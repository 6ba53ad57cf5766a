// The assembly stage (paper eq. 9, 15): every part's A and b (FEM bodies and cables on the
// backend, rigid bodies on the host), the virtual nodes' rows, the global system, and the
// initial guess of the solve (the previous step's v-hat when warm-starting, Sec. V-A5).
#pragma once

#include <memory>
#include <vector>

#include "models/system/virtual_nodes.h"
#include "models/world/bodies.h"

namespace condsim {

class AssembleStage {
 public:
  // the rigid part's backend arrays (once, at the first step)
  void Build(const WorldBodies& w);
  // assembles this step's system into w->system and the initial guess into w->v; returns the
  // rigid part's matrix values (RigidModel::Assemble layout) for the rigid groups
  const std::vector<Scalar>& Run(WorldBodies* w, const VirtualNodeSet& vn, bool warm);
  // the last Run's backend traffic in SystemMatrix::SetVirtualNodes (the merged pattern and the
  // eq. 15 term lists, uploaded when the virtual nodes change)
  const BackendCounters& pattern_counters() const { return pattern_counters_; }

 private:
  std::unique_ptr<DeviceBlockMatrix> rigid_a_;
  Array<Scalar> rigid_b_, rigid_v_;
  Array<Scalar> rigid_packed_;             // A values, b, v of the rigid part: one upload per step
  std::vector<Scalar> rigid_packed_host_;
  std::vector<Scalar> rigid_values_, rigid_rhs_;
  BackendCounters pattern_counters_;
};

}  // namespace condsim
