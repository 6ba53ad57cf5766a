// The deformable bodies' momenta on the backend (models/world/momenta.h).
#include "models/world/momenta.h"

#include "condsim/error.h"

namespace condsim {

void BodyMomentumSums::Prepare(const WorldBodies& w) {
  kernels_ = MakeKernels<WorldKernels>(*w.backend);
  std::vector<Scalar> mass;
  std::vector<Index> segments{0};
  first_.clear();
  const auto add = [&](Index n) {
    first_.push_back(segments.back());
    for (int k = 0; k < 7; ++k) segments.push_back(segments.back() + n);
  };
  for (const auto& f : w.fem) {
    add(f->model->num_nodes());
    mass.insert(mass.end(), f->mass.begin(), f->mass.end());
  }
  for (const auto& r : w.rods) {
    add(r->model->num_segments());
    mass.insert(mass.end(), std::size_t(r->model->num_segments()), Scalar(r->model->segment_mass()));
  }
  mass_.Assign(w.backend, mass);
  terms_.Resize(w.backend, segments.back());
  ones_.Assign(w.backend, std::vector<Scalar>(std::size_t(segments.back()), Scalar(1)));
  sums_.Resize(w.backend, 7 * Index(w.num_deformable()));
  segments_.Assign(w.backend, segments);
}

std::vector<BodyMomentum> BodyMomentumSums::Run(const WorldBodies& w) {
  const std::size_t nd = w.num_deformable();
  if (nd == 0) return {};
  if (first_.size() != nd) Prepare(w);
  for (std::size_t d = 0; d < nd; ++d) {
    const Index first = first_[d], points = first_[d] / 7;
    Scalar* terms = terms_.data() + first;
    const Scalar* mass = mass_.data() + points;
    if (d < w.fem.size()) {
      const FemBody& f = *w.fem[d];
      const Index n = f.model->num_nodes();
      kernels_->Run(n, BodyMomentumTermsOp{f.x.data(), f.v.data(), mass, nullptr, Vec3(0, 0, 0), 3, n, terms});
    } else {
      const RodBody& r = *w.rods[d - w.fem.size()];
      const Index n = r.model->num_segments();
      const Vec3 inertia(r.model->inertia()[0], r.model->inertia()[1], r.model->inertia()[2]);
      kernels_->Run(n, BodyMomentumTermsOp{r.model->positions().data(), r.v.data(), mass, r.model->orientations().data(), inertia, 6,
                                           n, terms});
    }
  }
  w.backend->SegmentedDot(terms_, ones_, segments_, &sums_);
  const std::vector<Scalar> s = sums_.ToHost();
  std::vector<BodyMomentum> out(nd);
  for (std::size_t d = 0; d < nd; ++d) {
    const Scalar* b = s.data() + 7 * d;
    out[d].kinetic_energy = b[0];
    out[d].linear = Vec3(b[1], b[2], b[3]);
    out[d].angular = Vec3(b[4], b[5], b[6]);
  }
  return out;
}

}  // namespace condsim
