// The integration stage.
#include "models/world/integrate.h"

namespace condsim {

void Integrate(WorldBodies* w, const std::vector<Scalar>& rigid_vhat) {
  const Scalar dt = w->params.dt;
  // rigid bodies on the host; their v-hat warm-starts the next solve
  w->rigid.Advance(dt, rigid_vhat);
  w->rigid_vhat_prev = rigid_vhat;
  for (auto& f : w->fem) {
    w->system->ScatterVelocity(f->part, w->v, &f->vhat);
    w->backend->Axpby(dt, f->vhat, 1, &f->x);  // x += t v-hat
    w->backend->Axpby(2, f->vhat, -1, &f->v);  // v = 2 v-hat - v
  }
  for (auto& r : w->rods) {
    w->system->ScatterVelocity(r->part, w->v, &r->vhat);
    r->model->Advance(r->vhat, dt);  // x += t v, R <- exp(t w) R
    w->backend->Axpby(2, r->vhat, -1, &r->v);
  }
}

}  // namespace condsim
