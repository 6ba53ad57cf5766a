// The assembly stage: parts, virtual nodes, the global system and the initial guess.
#include "models/world/assemble.h"

namespace condsim {

void AssembleStage::Build(const WorldBodies& w) {
  rigid_a_ = w.backend->CreateMatrix(w.rigid.pattern());
  rigid_b_ = Array<Scalar>(w.backend, 3 * w.rigid.num_nodes());
  rigid_v_ = Array<Scalar>(w.backend, 3 * w.rigid.num_nodes());
}

const std::vector<Scalar>& AssembleStage::Run(WorldBodies* w, const VirtualNodeSet& vn, bool warm) {
  const Scalar dt = w->params.dt;
  const BackendCounters c0 = w->backend->counters();
  w->system->SetVirtualNodes(vn);
  pattern_counters_ = w->backend->counters() - c0;
  // parts: FEM bodies and cables on the backend, rigid bodies on the host; the initial guess is
  // the previous step's v-hat (v at the first step; the midpoint rule's v_k = 2 v-hat - v_{k-1}
  // alternates about it); virtual nodes take J_v of it
  std::vector<const DeviceBlockMatrix*> parts_a;
  std::vector<const Array<Scalar>*> parts_b, parts_v;
  // FEM bodies: one Newton iteration of the midpoint equation (eq. 10) from the body's rigid
  // motion (the rigid part of the initial guess), i.e. the elements linearized at the rigid
  // midpoint x_k + (t/2) u: rotation-consistent where eq. 9's linearization at x_k gains angular
  // momentum and energy on a spinning body; deformation rates stay linearized at x_k (eq. 9), which
  // a predictor from the whole v-hat destabilized (a squeezed soft ball)
  // (FemModel::RigidPredictor, on the backend)
  for (auto& f : w->fem) {
    const Array<Scalar>& guess = warm ? f->vhat : f->v;
    f->model->RigidPredictor(f->x, guess, dt, &f->predictor);
    f->model->Assemble(f->x, f->v, dt, w->params.gravity, f->f_ext.size() > 0 ? &f->f_ext : nullptr, f->a.get(), &f->b,
                       &f->predictor);
    parts_a.push_back(f->a.get());
    parts_b.push_back(&f->b);
    parts_v.push_back(&guess);
  }
  for (auto& r : w->rods) {
    r->model->Assemble(r->v, dt, w->params.gravity, r->f_ext.size() > 0 ? &r->f_ext : nullptr, r->a.get(), &r->b);
    parts_a.push_back(r->a.get());
    parts_b.push_back(&r->b);
    parts_v.push_back(warm ? &r->vhat : &r->v);
  }
  const RigidModel& rigid = w->rigid;
  rigid.Assemble(dt, w->params.gravity, w->rigid_wrench, &rigid_values_, &rigid_rhs_);
  std::vector<Scalar> rigid_v(6 * std::size_t(rigid.num_bodies()));
  for (Index k = 0; k < rigid.num_bodies(); ++k) {
    StoreVec3(rigid_v.data(), 2 * k, rigid.body(k).v);
    StoreVec3(rigid_v.data(), 2 * k + 1, rigid.body(k).omega);
  }
  // the rigid part's A values, b and initial v in one upload (each upload waits for the device),
  // then split on the backend
  const std::vector<Scalar>& v0 = warm ? w->rigid_vhat_prev : rigid_v;
  Array<Scalar>& values = rigid_a_->mutable_values();
  CONDSIM_CHECK(rigid_values_.size() == std::size_t(values.size()) && rigid_rhs_.size() == std::size_t(rigid_b_.size()) &&
                    v0.size() == std::size_t(rigid_v_.size()),
                "assemble: the rigid part's sizes changed");
  rigid_packed_host_.clear();
  rigid_packed_host_.insert(rigid_packed_host_.end(), rigid_values_.begin(), rigid_values_.end());
  rigid_packed_host_.insert(rigid_packed_host_.end(), rigid_rhs_.begin(), rigid_rhs_.end());
  rigid_packed_host_.insert(rigid_packed_host_.end(), v0.begin(), v0.end());
  if (!rigid_packed_host_.empty()) {
    rigid_packed_.Assign(w->backend, rigid_packed_host_);
    const Scalar* src = rigid_packed_.data();
    for (Array<Scalar>* dst : {&values, &rigid_b_, &rigid_v_}) {
      if (dst->size() > 0) w->backend->CopyWithin(dst->data(), src, sizeof(Scalar) * std::size_t(dst->size()));
      src += dst->size();
    }
  }
  parts_a.push_back(rigid_a_.get());
  parts_b.push_back(&rigid_b_);
  parts_v.push_back(&rigid_v_);
  w->system->Assemble(parts_a, parts_b);
  w->system->GatherVelocity(parts_v, &w->v);
  return rigid_values_;
}

}  // namespace condsim
