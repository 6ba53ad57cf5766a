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
  const std::vector<Scalar> mass = w.BaseNodeMasses();
  total_mass_.assign(std::size_t(w.num_envs()), 0);
  for (std::size_t d = 0; d < w.num_deformable(); ++d) {
    const bool fem = d < w.fem.size();
    const Index env = fem ? w.Env(BodyKind::kFem, Index(d)) : w.Env(BodyKind::kRod, Index(d - w.fem.size()));
    const Index off = w.system->part_offset(w.DeformablePart(d));
    for (Index k = 0; k < w.DeformableNodes(d); ++k) total_mass_[std::size_t(env)] += mass[std::size_t(off + k)];
  }
  for (Index k = 0; k < w.rigid.num_bodies(); ++k) total_mass_[std::size_t(w.Env(BodyKind::kRigid, k))] += w.rigid.body(k).mass;
  last_energy_.assign(std::size_t(w.num_envs()), -1);
}

EnvFailure MakeFailure(Index env, Index body, Index step, Scalar time, const std::string& what) {
  std::ostringstream msg;
  msg << "world: environment " << env;
  if (body >= 0) msg << ", body " << body;
  msg << " diverged (" << what << ") at step " << step << " (t = " << time << " s)";
  return {env, body, msg.str()};
}

namespace {

// the speed [m/s] of the kinetic-energy floor: from rest, a jump to sqrt(max_energy_growth) times
// it (31.6 m/s at the default) is a divergence
constexpr Scalar kEnergyFloorSpeed = 1;

}  // namespace

HealthReport HealthStage::Run(const WorldBodies& w, const VhatSummary& vhat, Index step, Scalar time,
                              std::vector<HealthReport>* env_reports, std::vector<EnvFailure>* failures) {
  const HealthLimits& lim = w.params.health;
  const std::size_t ne = std::size_t(w.num_envs());
  std::vector<HealthReport>& rep = *env_reports;
  rep.assign(ne, HealthReport());
  std::vector<std::string> failed(ne);  // the first failure found per environment
  auto fail = [&](Index env, Index body, const std::string& what) {
    if (failed[std::size_t(env)].empty()) failed[std::size_t(env)] = what, failures->push_back(MakeFailure(env, body, step, time, what));
  };
  auto speed = [&](HealthReport& r, Scalar s, Index body) {
    if (s > r.max_speed) {
      r.max_speed = s;
      r.fastest_body = body;
    }
  };
  auto distance = [&](HealthReport& r, Index env, Scalar d, Index body) {
    if (!std::isfinite(d)) fail(env, body, "NaN/Inf position");
    if (d > r.max_distance) {
      r.max_distance = d;
      r.farthest_body = body;
    }
  };
  // deformable bodies: nodes with mass (FEM nodes, segment centres); positions from the backend
  for (std::size_t d = 0; d < w.num_deformable(); ++d) {
    const bool fem = d < w.fem.size();
    const Index body = fem ? w.BodyId(BodyKind::kFem, Index(d)) : w.BodyId(BodyKind::kRod, Index(d - w.fem.size()));
    const Index env = w.body_env[std::size_t(body)];
    if (w.Failed(env)) continue;
    HealthReport& r = rep[std::size_t(env)];
    // the kinetic energy of the nodes and segment centres (no spin of the segments) and the
    // largest node speed, reduced on the backend (VhatSummary)
    r.kinetic_energy += vhat.kinetic_energy[d];
    speed(r, vhat.max_speed[d], body);
    const Array<Scalar>& x = fem ? w.fem[d]->x : w.rods[d - w.fem.size()]->model->positions();
    distance(r, env, w.backend->MaxAbs(x), body);
  }
  for (Index k = 0; k < w.rigid.num_bodies(); ++k) {
    const Index body = w.BodyId(BodyKind::kRigid, k), t = w.RigidNode(k), env = w.body_env[std::size_t(body)];
    if (w.Failed(env)) continue;
    HealthReport& r = rep[std::size_t(env)];
    const Index t0 = t - w.RigidNode(0);
    const Vec3 v = vhat.RigidNode(t0), om = vhat.RigidNode(t0 + 1);
    const RigidBody& b = w.rigid.body(k);
    r.kinetic_energy += w.RigidMomentum(k, v, om).kinetic_energy;
    speed(r, Norm(v), body);
    distance(r, env, std::max({std::fabs(b.x[0]), std::fabs(b.x[1]), std::fabs(b.x[2])}), body);
  }
  HealthReport all;
  for (std::size_t e = 0; e < ne; ++e) {
    if (w.Failed(Index(e))) continue;
    const HealthReport& r = rep[e];
    if (r.max_speed > lim.max_speed) {
      std::ostringstream what;
      what << "speed " << r.max_speed << " m/s above world.health.max_speed " << lim.max_speed << " m/s";
      fail(Index(e), r.fastest_body, what.str());
    }
    if (!(r.max_distance <= lim.max_distance)) {
      std::ostringstream what;
      what << "a coordinate of " << r.max_distance << " m, outside world.health.max_distance " << lim.max_distance << " m";
      fail(Index(e), r.farthest_body, what.str());
    }
    // the energy may grow by at most max_energy_growth over the last step's plus the floor of every
    // body at kEnergyFloorSpeed (a start from rest, a drive starting to pull, are not blow-ups)
    const Scalar floor = Scalar(0.5) * total_mass_[e] * kEnergyFloorSpeed * kEnergyFloorSpeed;
    if (last_energy_[e] >= 0 && r.kinetic_energy > lim.max_energy_growth * (last_energy_[e] + floor)) {
      std::ostringstream what;
      what << "kinetic energy " << r.kinetic_energy << " J after " << last_energy_[e] << " J, more than world.health.max_energy_growth = "
           << lim.max_energy_growth << " times that plus " << floor << " J";
      fail(Index(e), r.fastest_body, what.str());
    }
    if (failed[e].empty()) last_energy_[e] = r.kinetic_energy;
    if (r.max_speed > all.max_speed || all.fastest_body < 0) {
      all.max_speed = r.max_speed;
      all.fastest_body = r.fastest_body;
    }
    if (r.max_distance > all.max_distance || all.farthest_body < 0) {
      all.max_distance = r.max_distance;
      all.farthest_body = r.farthest_body;
    }
    all.kinetic_energy += r.kinetic_energy;
  }
  return all;
}

}  // namespace condsim
