// The health stage: speed, kinetic energy and distance bounds per body and step.
#include "models/world/health.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "condsim/error.h"

namespace condsim {

void HealthLimits::Validate() const {
  CONDSIM_CHECK(std::isfinite(max_speed) && max_speed > 0, "world.health: max_speed must be > 0 [m/s], got " << max_speed);
  CONDSIM_CHECK(std::isfinite(max_distance) && max_distance > 0, "world.health: max_distance must be > 0 [m], got " << max_distance);
  CONDSIM_CHECK(std::isfinite(max_energy_growth) && max_energy_growth > 1,
                "world.health: max_energy_growth must be > 1, got " << max_energy_growth);
}

void HealthStage::Build(const WorldBodies& w) {
  mass_ = w.BaseNodeMasses();
  total_mass_ = 0;
  for (Scalar m : mass_) total_mass_ += m;
  for (Index k = 0; k < w.rigid.num_bodies(); ++k) total_mass_ += w.rigid.body(k).mass;
}

namespace {

// the speed [m/s] of the kinetic-energy floor: from rest, a jump to sqrt(max_energy_growth) times
// it (31.6 m/s at the default) is a divergence
constexpr Scalar kEnergyFloorSpeed = 1;

[[noreturn]] void Diverged(Index body, Index step, Scalar time, const std::string& what) {
  std::ostringstream msg;
  msg << "world: environment 0, body " << body << " diverged (" << what << ") at step " << step << " (t = " << time << " s)";
  throw DivergenceError(msg.str(), 0, body, step);
}

}  // namespace

HealthReport HealthStage::Run(const WorldBodies& w, const std::vector<Scalar>& vhat, Index step, Scalar time) {
  const HealthLimits& lim = w.params.health;
  HealthReport r;
  auto speed = [&](Scalar s, Index body) {
    if (s > r.max_speed) {
      r.max_speed = s;
      r.fastest_body = body;
    }
  };
  auto distance = [&](Scalar d, Index body) {
    if (!std::isfinite(d)) Diverged(body, step, time, "NaN/Inf position");
    if (d > r.max_distance) {
      r.max_distance = d;
      r.farthest_body = body;
    }
  };
  // deformable bodies: nodes with mass (FEM nodes, segment centres); positions from the backend
  for (std::size_t d = 0; d < w.num_deformable(); ++d) {
    const bool fem = d < w.fem.size();
    const Index body = fem ? w.BodyId(BodyKind::kFem, Index(d)) : w.BodyId(BodyKind::kRod, Index(d - w.fem.size()));
    const Index off = w.system->part_offset(w.DeformablePart(d));
    // the kinetic energy of the nodes and segment centres (no spin of the segments), shared with
    // the per-step body statistics (WorldBodies::FemMomentum, RodMomentum)
    const Scalar* vd = vhat.data() + 3 * std::size_t(off);
    r.kinetic_energy += fem ? w.FemMomentum(Index(d), nullptr, vd).kinetic_energy
                            : w.RodMomentum(Index(d - w.fem.size()), nullptr, nullptr, vd).kinetic_energy;
    for (Index k = 0; k < w.DeformableNodes(d); ++k)
      if (mass_[off + k] > 0) speed(Norm(LoadVec3(vhat.data(), off + k)), body);
    const Array<Scalar>& x = fem ? w.fem[d]->x : w.rods[d - w.fem.size()]->model->positions();
    distance(w.backend->MaxAbs(x), body);
  }
  for (Index k = 0; k < w.rigid.num_bodies(); ++k) {
    const Index body = w.BodyId(BodyKind::kRigid, k), t = w.RigidNode(k);
    const Vec3 v = LoadVec3(vhat.data(), t), om = LoadVec3(vhat.data(), t + 1);
    const RigidBody& b = w.rigid.body(k);
    r.kinetic_energy += w.RigidMomentum(k, v, om).kinetic_energy;
    speed(Norm(v), body);
    distance(std::max({std::fabs(b.x[0]), std::fabs(b.x[1]), std::fabs(b.x[2])}), body);
  }
  if (r.max_speed > lim.max_speed) {
    std::ostringstream what;
    what << "speed " << r.max_speed << " m/s above world.health.max_speed " << lim.max_speed << " m/s";
    Diverged(r.fastest_body, step, time, what.str());
  }
  if (!(r.max_distance <= lim.max_distance)) {
    std::ostringstream what;
    what << "a coordinate of " << r.max_distance << " m, outside world.health.max_distance " << lim.max_distance << " m";
    Diverged(r.farthest_body, step, time, what.str());
  }
  // the energy may grow by at most max_energy_growth over the last step's plus the floor of every
  // body at kEnergyFloorSpeed (a start from rest, a drive starting to pull, are not blow-ups)
  const Scalar floor = Scalar(0.5) * total_mass_ * kEnergyFloorSpeed * kEnergyFloorSpeed;
  if (last_energy_ >= 0 && r.kinetic_energy > lim.max_energy_growth * (last_energy_ + floor)) {
    std::ostringstream what;
    what << "kinetic energy " << r.kinetic_energy << " J after " << last_energy_ << " J, more than world.health.max_energy_growth = "
         << lim.max_energy_growth << " times that plus " << floor << " J";
    Diverged(r.fastest_body, step, time, what.str());
  }
  last_energy_ = r.kinetic_energy;
  return r;
}

}  // namespace condsim
