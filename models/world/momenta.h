// The deformable bodies' kinetic energy, linear and angular momentum reduced on the backend, for
// StepStats::bodies and World::BodyMomenta: per step one launch per body and one segmented sum,
// and 7 numbers per body read back (docs/architecture.md, "Device-resident step").
#pragma once

#include <memory>
#include <vector>

#include "condsim/backend.h"
#include "models/world/bodies.h"
#include "models/world/world_kernels.h"

namespace condsim {

class BodyMomentumSums {
 public:
  // per deformable body d (WorldBodies order: the FEM bodies, then the cables) its kinetic
  // energy, m v and x × m v summed over its points (FEM: the lumped node masses; cables: the
  // segment masses, plus the segments' spin, BodyMomentumTermsOp); the sums follow cpu::SegmentedReduce's chunk order
  // (CUDA: chunk_reduce.h), so a body sums alike in a batch and alone
  std::vector<BodyMomentum> Run(const WorldBodies& w);

 private:
  // once per World: the masses per point and the segments, 7 per body
  void Prepare(const WorldBodies& w);

  std::unique_ptr<WorldKernels> kernels_;
  Array<Scalar> mass_, terms_, ones_, sums_;
  SegmentOffsets segments_;
  std::vector<Index> first_;  // per body, the first of its 7 n terms (and its points in mass_: first_ / 7)
};

}  // namespace condsim
