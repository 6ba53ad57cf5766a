// A rigid body on many deformable contacts: the rigid group's own contacts solved by repeated
// Gauss-Seidel sweeps (CondParams::rigid_sweeps, RigidContactSweepOp; docs/solver.md "Rigid
// groups"). References: the diagonal contact solve (rigid_sweeps = 0), which has the same fixed
// point, and statics (the contacts carry the plate's weight).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "models/world/world.h"
#include "test_util.h"

namespace condsim {
namespace {

constexpr Scalar kPlateMass = 0.2;  // [kg]

// a world with the floor plane, solved to theta [m/s]
std::unique_ptr<World> WorldOnFloor(Backend* backend, Scalar theta, int rigid_sweeps) {
  WorldParams p;
  p.dt = 0.01;
  p.cond.theta_threshold = theta;
  p.cond.max_iterations = 100000;
  p.cond.rigid_sweeps = rigid_sweeps;
  auto world = std::make_unique<World>(backend, p);
  StaticShape floor;
  floor.type = ShapeType::kPlane;
  world->AddStatic(floor);
  return world;
}

// E 100 kPa, nu 0.3, 1000 kg/m^3, Rayleigh alpha 10 / s
FemMaterial SoftMaterial() {
  FemMaterial mat;
  mat.young = 1e5;
  mat.poisson = 0.3;
  mat.density = 1000;
  mat.rayleigh_alpha = 10;
  return mat;
}

// a soft 4 cm FEM cube (E 100 kPa) on the floor with a rigid plate 1 cm thick lying on it: 6 cm
// wide, the cube's 16 top nodes touch the plate's underside (its corners overhang the cube); 3 cm
// wide, 4 top nodes touch it and its corners touch the cube's top triangles (barycentric nodes)
struct PlateOnBlock {
  std::unique_ptr<Backend> backend = MakeBackend(BackendChoice::kCpu).backend;
  std::unique_ptr<World> world;
  Index block = -1, plate = -1;
  PlateOnBlock(int rigid_sweeps, Scalar theta, Scalar half_width = 0.03) {
    world = WorldOnFloor(backend.get(), theta, rigid_sweeps);
    block = world->AddFem(MakeBoxMesh(Vec3(-0.02, -0.02, 0), Vec3(0.04, 0.04, 0.04), 3, 3, 3), SoftMaterial(), "block", 0.5,
                          false);
    RigidBody body = MakeRigidBox(Vec3(half_width, half_width, 0.005), kPlateMass);
    body.x = Vec3(0.001, -0.002, 0.045);  // a little off-centre: the contact forces differ
    plate = world->AddRigid(body);
  }
};

// one step from the same state: the sweeps reach the diagonal solve's v-hat and contact forces
// (tolerance: a few times theta_th = 1e-10 m/s over the slowest mode, and 1e-6 of the force),
// in fewer iterations; with the wide plate (FEM nodes only) and the narrow one (its corners on
// the cube's triangles too)
TEST(WorldRigidContact, SweepsReachTheDiagonalSolvesFixedPoint) {
  for (Scalar half : {0.03, 0.015}) {
    PlateOnBlock diagonal(0, 1e-10, half), sweeps(32, 1e-10, half);
    const StepStats a = diagonal.world->Step();
    const StepStats b = sweeps.world->Step();
    ASSERT_TRUE(a.cond.converged);
    ASSERT_TRUE(b.cond.converged);
    Index corners = 0;  // plate samples against the cube's triangles
    for (const ContactRecord& c : sweeps.world->contacts()) corners += c.body_i == sweeps.plate && c.body_j == sweeps.block;
    const Wrench fa = diagonal.world->BodyWrench(diagonal.plate), fb = sweeps.world->BodyWrench(sweeps.plate);
    std::printf("[ plate    ] %.0f cm, first step: %d contacts (%d plate corners); %d iterations diagonal, %d with sweeps; "
                "plate force %.9f / %.9f N\n",
                200 * half, int(b.contacts), int(corners), a.cond.iterations, b.cond.iterations, fa.force[2], fb.force[2]);
    EXPECT_GE(b.contacts, half > 0.02 ? 16 : 8);
    EXPECT_EQ(corners, half > 0.02 ? 0 : 4);
    EXPECT_LT(test::MaxDiff(diagonal.world->FemVelocities(diagonal.block), sweeps.world->FemVelocities(sweeps.block)), 1e-8) << "m/s";
    const RigidBody &pa = diagonal.world->rigid_body(diagonal.plate), &pb = sweeps.world->rigid_body(sweeps.plate);
    EXPECT_LT(Norm(pa.v - pb.v), 1e-8) << "m/s";
    EXPECT_LT(Norm(pa.omega - pb.omega), 1e-6) << "rad/s";
    EXPECT_LT(Norm(fa.force - fb.force), 1e-6 * Norm(fa.force)) << "N";
    EXPECT_LT(b.cond.iterations, a.cond.iterations);
  }
}

// statics over the second half of 3 s at the default settings: the contacts carry the plate's
// weight m g (to 1 %, the remaining vibration averaged out), with no net sideways force, and the
// plate stays level. The plate rings on the block (0.2 kg on about E A / h = 4000 N/m: 22 Hz,
// 0.07 m/s at first) and the inelastic stage, which restores only the relative velocity of a
// pressed contact, leaves that vibration to the block's Rayleigh damping (0.04 m/s after 0.5 s,
// 0.01 m/s after 3.8 s): over the second half of 1 s the mean was 1.5 % low
// (models/world/inelastic.h)
TEST(WorldRigidContact, SoftBlockCarriesThePlate) {
  PlateOnBlock scene(CondParams().rigid_sweeps, 1e-5);
  Vec3 mean_force;
  double iterations = 0;
  const int steps = 300;
  for (int k = 0; k < steps; ++k) {
    const StepStats st = scene.world->Step();
    ASSERT_TRUE(st.cond.converged) << "step " << k;
    iterations += st.cond.iterations;
    if (k >= steps / 2) mean_force += Scalar(2.0 / steps) * scene.world->BodyWrench(scene.plate).force;
  }
  const Scalar weight = kPlateMass * 9.81;
  const Vec3 up = ToMatrix(scene.world->rigid_body(scene.plate).q).Col(2);
  std::printf("[ plate    ] mean contact force %.5f N (weight %.5f N), tilt %.3f deg, %.1f iterations/step\n", mean_force[2], weight,
              std::acos(std::min<Scalar>(1, up[2])) * 180 / 3.14159265358979323846, iterations / steps);
  EXPECT_NEAR(mean_force[2], weight, 0.01 * weight);
  EXPECT_NEAR(mean_force[0], 0, 0.01 * weight);
  EXPECT_NEAR(mean_force[1], 0, 0.01 * weight);
  EXPECT_GT(up[2], std::cos(1.0 * 3.14159265358979323846 / 180));
}

// a rigid box resting on the floor (its four bottom corners: static contacts, the diagonal solve)
// with a soft FEM block beside it, 0.5 mm from its side face: inside the detection margin, so
// the block's face nodes bring contacts on the box's side (swept, CondParams::rigid_sweeps) that
// never carry force. Reference: the same world with the block 5 cm away (no such contacts). The
// box's floor contacts take Gamma = d_v over the floor contacts only; with d_v over all of the
// box's virtual nodes, the idle side contacts made the floor's Jacobi step about ten times too
// short (the soft gripper's cube: 22 iterations per step before the fingers came near, 225
// after). Tolerances: the fixed point to 1e-8 m/s (10 theta_th); iterations within 1.5x + 10.
TEST(WorldRigidContact, IdleSweptContactsDoNotSlowTheFloorContacts) {
  auto build = [](Scalar gap, std::unique_ptr<Backend>* backend) {
    *backend = MakeBackend(BackendChoice::kCpu).backend;
    auto world = WorldOnFloor(backend->get(), 1e-9, CondParams().rigid_sweeps);
    world->AddFem(MakeBoxMesh(Vec3(0.01 + gap, -0.015, 0), Vec3(0.02, 0.03, 0.02), 3, 3, 3), SoftMaterial(), "block", 0.5, false);
    RigidBody body = MakeRigidBox(Vec3(0.01, 0.01, 0.01), 0.02);
    body.x = Vec3(0, 0, 0.01);
    world->AddRigid(body);
    return world;
  };
  std::unique_ptr<Backend> backend_near, backend_far;
  std::unique_ptr<World> near = build(5e-4, &backend_near), far = build(0.05, &backend_far);
  const Index box = 1;
  int it_near = 0, it_far = 0;
  Index side_contacts = 0;
  for (int k = 0; k < 10; ++k) {
    const StepStats a = near->Step(), b = far->Step();
    ASSERT_TRUE(a.cond.converged && b.cond.converged) << "step " << k;
    it_near += a.cond.iterations;
    it_far += b.cond.iterations;
    for (const ContactRecord& c : near->contacts())
      if ((c.body_i == box) != (c.body_j == box) && c.body_j != -1 && c.body_i != -1) {
        ++side_contacts;
        EXPECT_EQ(Norm(c.lambda), 0) << "step " << k << ": a side contact carries force";
      }
  }
  const RigidBody &bn = near->rigid_body(box), &bf = far->rigid_body(box);
  std::printf("[ box      ] 10 steps: %d iterations beside the block (%d side contacts over the steps), %d with the block away\n",
              it_near, int(side_contacts), it_far);
  EXPECT_GT(side_contacts, 10);
  EXPECT_LT(Norm(bn.v - bf.v), 1e-8) << "m/s";
  EXPECT_LT(Norm(bn.omega - bf.omega), 1e-6) << "rad/s";
  EXPECT_LE(it_near, 1.5 * it_far + 10);
}

}  // namespace
}  // namespace condsim
