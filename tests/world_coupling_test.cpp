// Couplings through the backend detector (models/collision/detector.h) in the world: static
// triangle meshes under rigid bodies and FEM bodies, rigid samples on FEM surfaces, cables on FEM
// and rigid bodies. References: the analytic sliding law on an incline (x = g (sin a - mu cos a)
// t^2 / 2), statics (contact forces carry the weight), and independent penetration measures
// (exact signed distances to the shapes, closest points on the FEM surface triangles).
#include <gtest/gtest.h>

#include <cmath>

#include "models/collision/primitives.h"
#include "models/world/world.h"
#include "test_util.h"

namespace condsim {
namespace {

constexpr Scalar kG = 9.81;

WorldParams Params(Scalar theta) {
  WorldParams p;
  p.dt = 0.01;
  p.cond.theta_threshold = theta;
  p.cond.max_iterations = 5000;
  return p;
}

// an n x n grid of squares (two triangles each) of side `size` centred at the origin, tilted
// about the y axis by `tilt` [rad]; normals up
SurfaceMesh Sheet(Scalar size, Index n, Scalar tilt) {
  SurfaceMesh m;
  const Mat3 r = ToMatrix(FromRotationVector(Vec3(0, tilt, 0)));
  for (Index i = 0; i <= n; ++i)
    for (Index j = 0; j <= n; ++j) {
      const Vec3 p = r * Vec3(size * (Scalar(i) / n - 0.5), size * (Scalar(j) / n - 0.5), 0);
      m.x.insert(m.x.end(), {p[0], p[1], p[2]});
    }
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < n; ++j) {
      const Index a = i * (n + 1) + j, b = a + n + 1;
      m.triangles.insert(m.triangles.end(), {a, b, b + 1, a, b + 1, a + 1});
    }
  return m;
}

// deepest point of `x` (3 per point, radius r) below a surface mesh's triangles [m] (closest
// triangle by brute force, signed along its normal)
Scalar DepthBelow(const SurfaceMesh& m, const std::vector<Scalar>& x, Scalar r) {
  Scalar worst = 0;
  for (std::size_t i = 0; i < x.size() / 3; ++i) {
    const Vec3 p = LoadVec3(x.data(), Index(i));
    Scalar best = 1e30, signed_d = 0;
    for (std::size_t t = 0; t < m.triangles.size(); t += 3) {
      const Vec3 a = LoadVec3(m.x.data(), m.triangles[t]), b = LoadVec3(m.x.data(), m.triangles[t + 1]),
                 c = LoadVec3(m.x.data(), m.triangles[t + 2]);
      const Vec3 w = ClosestOnTriangle(p, a, b, c);
      const Vec3 d = p - (w[0] * a + w[1] * b + w[2] * c);
      if (Norm(d) < best) {
        best = Norm(d);
        signed_d = Dot(d, Normalized(Cross(b - a, c - a)));
      }
    }
    worst = std::max(worst, r - signed_d);
  }
  return worst;
}

// a rigid box on a tilted static mesh: slides by the analytic law (mu < tan a), as Table I's box
// on a plane; the contacts name the mesh
TEST(WorldCoupling, RigidBoxSlidesDownStaticMeshIncline) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  World world(backend.get(), Params(1e-10));
  const Scalar tilt = 0.3, mu = 0.2;
  // tilted about y by -tilt: the surface rises towards +x
  const Index mesh = world.AddStaticMesh(Sheet(2.0, 8, -tilt), mu, "ramp");
  RigidBody box = MakeRigidBox(Vec3(0.1, 0.1, 0.1), 0.5);
  box.mu1 = box.mu2 = mu;
  box.q = FromRotationVector(Vec3(0, -tilt, 0));
  box.x = ToMatrix(box.q) * Vec3(0, 0, 0.1);
  const Vec3 x0 = box.x;
  const Index id = world.AddRigid(box);
  // friction sqrt(mu_mesh mu_body) = mu
  const Scalar a = kG * (std::sin(tilt) - mu * std::cos(tilt));
  const Vec3 down = ToMatrix(box.q) * Vec3(-1, 0, 0);
  Scalar mean = 0;
  int mesh_contacts = 0;
  for (int k = 0; k < 50; ++k) {
    const StepStats st = world.Step();
    ASSERT_TRUE(st.cond.converged) << "step " << k << ": " << st.contacts << " contacts, " << st.cond.iterations << " iterations, residual " << st.cond.residual;
    for (const ContactRecord& c : world.contacts()) mesh_contacts += c.mesh == mesh && c.body_i == id;
    const Scalar t = world.time();
    mean += Norm(world.rigid_body(id).x - (x0 + (a * t * t / 2) * down)) / 50;
  }
  std::printf("box on a mesh incline: mean error %.4g mm over 0.5 s (%d mesh contacts)\n", mean * 1e3, mesh_contacts);
  EXPECT_EQ(mesh_contacts, 4 * 50);  // the four lower corners every step
  EXPECT_LT(mean, 1e-5);
}

// a soft FEM cube resting on a static mesh floor: the contacts carry its weight and it does not
// sink into the mesh
TEST(WorldCoupling, FemCubeRestsOnStaticMesh) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  World world(backend.get(), Params(1e-6));
  const SurfaceMesh sheet = Sheet(0.3, 6, 0);
  world.AddStaticMesh(sheet, 0.5);
  FemMaterial mat;
  mat.young = 2e5;
  mat.rayleigh_alpha = 10;
  const Index cube = world.AddFem(MakeBoxMesh(Vec3(-0.02, -0.017, 0.002), Vec3(0.04, 0.04, 0.04), 3, 3, 3), mat, "cube");
  Vec3 force;
  Scalar deepest = 0;
  for (int k = 0; k < 150; ++k) {
    world.Step();
    if (k >= 50) force += Scalar(0.01) * world.BodyWrench(cube).force;
    deepest = std::max(deepest, DepthBelow(sheet, world.FemPositions(cube), 0));
  }
  const Scalar weight = 1000 * 0.04 * 0.04 * 0.04 * kG;
  std::printf("FEM cube on a mesh: mean force %.5f N (weight %.5f N), deepest %.3g mm\n", force[2], weight, deepest * 1e3);
  EXPECT_NEAR(force[2], weight, 0.01 * weight);
  EXPECT_LT(deepest, 1e-4);
}

// a rigid sphere resting on a soft FEM block (its sample against the block's surface triangles):
// the contact carries the sphere's weight and its surface stays out of the block
TEST(WorldCoupling, RigidSphereRestsOnFemBlock) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  World world(backend.get(), Params(1e-6));
  StaticShape floor;
  world.AddStatic(floor);
  FemMaterial mat;
  mat.young = 1e5;
  mat.rayleigh_alpha = 10;
  const TetMesh block_mesh = MakeBoxMesh(Vec3(-0.05, -0.05, 0), Vec3(0.1, 0.1, 0.04), 5, 5, 2);
  const Index block = world.AddFem(block_mesh, mat, "block");
  RigidBody ball = MakeRigidSphere(0.015, 0.05);
  ball.x = Vec3(0.003, -0.002, 0.04 + 0.015 + 0.002);
  const Index id = world.AddRigid(ball);
  Vec3 force;
  Scalar deepest = 0;
  int fem_contacts = 0;
  for (int k = 0; k < 150; ++k) {
    const StepStats st = world.Step();
    ASSERT_TRUE(st.cond.converged) << "step " << k;
    if (k >= 50) force += Scalar(0.01) * world.BodyWrench(id).force;
    for (const ContactRecord& c : world.contacts()) fem_contacts += c.body_i == id && c.body_j == block;
    // the sphere's surface against the block's surface triangles (independent closest points)
    const std::vector<Scalar> x = world.FemPositions(block);
    const std::vector<Index> tris = SurfaceTriangles(block_mesh);
    const Vec3 c = world.rigid_body(id).x;
    for (std::size_t t = 0; t < tris.size(); t += 3) {
      const Vec3 a = LoadVec3(x.data(), tris[t]), b = LoadVec3(x.data(), tris[t + 1]), cc = LoadVec3(x.data(), tris[t + 2]);
      const Vec3 w = ClosestOnTriangle(c, a, b, cc);
      const Vec3 d = c - (w[0] * a + w[1] * b + w[2] * cc);
      if (Dot(d, Cross(b - a, cc - a)) > 0) deepest = std::max(deepest, 0.015 - Norm(d));
    }
  }
  const Scalar weight = 0.05 * kG;
  std::printf("sphere on an FEM block: mean force %.5f N (weight %.5f N), deepest %.3g mm, %d contacts\n", force[2], weight,
              deepest * 1e3, fem_contacts);
  EXPECT_GT(fem_contacts, 100);
  EXPECT_NEAR(force[2], weight, 0.01 * weight);
  EXPECT_LT(deepest, 1e-4);
}

// a cable dropped across an FEM block and a rigid box standing on the floor: it drapes over both
// without entering them, and at rest the contacts carry its weight
TEST(WorldCoupling, CableDrapesOverFemBlockAndRigidBox) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  // a cable in contact with soft bodies needs a few hundred iterations, at times over a thousand
  WorldParams p = Params(1e-5);
  p.cond.max_iterations = 10000;
  World world(backend.get(), p);
  StaticShape floor;
  world.AddStatic(floor);
  FemMaterial mat;
  mat.young = 2e5;
  mat.rayleigh_alpha = 10;
  const TetMesh block_mesh = MakeBoxMesh(Vec3(-0.1, -0.03, 0), Vec3(0.06, 0.06, 0.04), 3, 3, 2);
  const Index block = world.AddFem(block_mesh, mat, "block");
  RigidBody box = MakeRigidBox(Vec3(0.03, 0.03, 0.02), 0.3);
  box.x = Vec3(0.07, 0, 0.02);
  const Index rigid = world.AddRigid(box);
  RodMaterial rm;
  rm.radius = 0.003;
  rm.rayleigh_alpha = 5;
  const Scalar z0 = 0.04 + rm.radius + 0.005;
  const RodGeometry geo = MakePolylineRod({Vec3(-0.15, 0, z0), Vec3(0.15, 0, z0)}, 40);
  const Index cable = world.AddRod(geo, rm, RodEnd(), RodEnd(), "cable");
  Vec3 force;
  Scalar fem_deepest = 0, box_deepest = 0;
  int on_fem = 0, on_box = 0;
  for (int k = 0; k < 150; ++k) {
    const StepStats st = world.Step();
    ASSERT_TRUE(st.cond.converged) << "step " << k << ": " << st.cond.iterations << " iterations, " << st.contacts << " contacts, residual " << st.cond.residual;
    if (k >= 100) force += Scalar(0.02) * world.BodyWrench(cable).force;
    for (const ContactRecord& c : world.contacts()) {
      on_fem += c.body_i == cable && c.body_j == block;
      on_box += c.body_i == cable && c.body_j == rigid;
    }
    const std::vector<Scalar> x = world.RodPositions(cable);
    const std::vector<Scalar> xb = world.FemPositions(block);
    const std::vector<Index> tris = SurfaceTriangles(block_mesh);
    StaticShape shape;
    shape.type = ShapeType::kBox;
    shape.center = world.rigid_body(rigid).x;
    shape.orientation = world.rigid_body(rigid).q;
    shape.size = box.size;
    for (std::size_t i = 0; i < x.size() / 3; ++i) {
      const Vec3 p = LoadVec3(x.data(), Index(i));
      box_deepest = std::max(box_deepest, rm.radius - ShapeProximity(shape, p).distance);
      // centres over the block's top face: their height above it
      if (p[0] > -0.1 && p[0] < -0.04) {
        Scalar top = -1;
        for (std::size_t t = 0; t < tris.size(); t += 3) {
          const Vec3 a = LoadVec3(xb.data(), tris[t]), b = LoadVec3(xb.data(), tris[t + 1]), c = LoadVec3(xb.data(), tris[t + 2]);
          if (Normalized(Cross(b - a, c - a))[2] < 0.9) continue;
          const Vec3 w = ClosestOnTriangle(p, a, b, c);
          if (w[0] >= 0 && w[1] >= 0 && w[2] >= 0) top = std::max(top, (w[0] * a + w[1] * b + w[2] * c)[2]);
        }
        if (top > 0) fem_deepest = std::max(fem_deepest, rm.radius - (p[2] - top));
      }
    }
  }
  const Scalar weight = world.rod_model(cable).segment_mass() * Scalar(world.rod_model(cable).num_segments()) * kG;
  std::printf("cable over FEM block and rigid box: mean force %.5f N (weight %.5f N), into the block %.3g mm, into the box "
              "%.3g mm, contacts %d / %d\n",
              force[2], weight, fem_deepest * 1e3, box_deepest * 1e3, on_fem, on_box);
  EXPECT_GT(on_fem, 100);
  EXPECT_GT(on_box, 100);
  EXPECT_NEAR(force[2], weight, 0.02 * weight);
  EXPECT_LT(fem_deepest, 1e-4);
  EXPECT_LT(box_deepest, 1e-4);
}

// a mesh-shaped rigid cube (its 26 surface vertices are samples) resting on the floor carries its
// weight and does not drift; an analytic box resting on it and an FEM cube beside it on it touch
// its triangles through the detector and are carried too
TEST(WorldCoupling, MeshShapedRigidBodyCarriesBoxesAndFem) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  World world(backend.get(), Params(1e-6));
  StaticShape floor;
  world.AddStatic(floor);
  std::vector<Scalar> x;
  std::vector<Index> tri;
  test::BoxSurface(Vec3(0.1, 0.1, 0.05), 2, &x, &tri);
  RigidBody base = MakeRigidMesh(x, tri, 2.0, "base");
  base.x = Vec3(0, 0, 0.05);  // the centre of mass; the pose keeps the mesh's principal frame
  const Index slab = world.AddRigid(base);
  RigidBody box = MakeRigidBox(Vec3(0.03, 0.03, 0.03), 0.2);
  box.x = Vec3(0.05, 0.02, 0.1 + 0.03 + 0.001);
  const Index top = world.AddRigid(box);
  FemMaterial mat;
  mat.young = 2e5;
  mat.rayleigh_alpha = 10;
  const Index cube = world.AddFem(MakeBoxMesh(Vec3(-0.08, -0.06, 0.101), Vec3(0.04, 0.04, 0.04), 2, 2, 2), mat, "cube");
  const Vec3 x0 = world.rigid_body(slab).x;
  Vec3 f_slab, f_top, f_cube;
  Scalar sink_top = 0, sink_cube = 0;
  for (int k = 0; k < 150; ++k) {
    const StepStats st = world.Step();
    ASSERT_TRUE(st.cond.converged) << "step " << k << ": " << st.cond.iterations << " iterations";
    if (k >= 50) {
      f_slab += Scalar(0.01) * world.BodyWrench(slab).force;
      f_top += Scalar(0.01) * world.BodyWrench(top).force;
      f_cube += Scalar(0.01) * world.BodyWrench(cube).force;
    }
    // the slab's top face is at z = 0.1 (it does not move): nothing below it
    const RigidBody& b = world.rigid_body(top);
    for (const SurfacePoint& s : ContactSamples(b)) sink_top = std::max(sink_top, 0.1 - (b.x + ToMatrix(b.q) * s.local)[2]);
    const std::vector<Scalar> xc = world.FemPositions(cube);
    for (std::size_t i = 2; i < xc.size(); i += 3) sink_cube = std::max(sink_cube, 0.1 - xc[i]);
  }
  const Scalar w_top = 0.2 * 9.81, w_cube = 1000 * 0.04 * 0.04 * 0.04 * 9.81, w_all = 2.0 * 9.81 + w_top + w_cube;
  std::printf("mesh slab: floor carries %.5f N (all %.5f N), top box %.5f N (%.5f), FEM cube %.5f N (%.5f); sink %.3g / %.3g mm, "
              "drift %.3g mm\n",
              f_slab[2], w_all, f_top[2], w_top, f_cube[2], w_cube, sink_top * 1e3, sink_cube * 1e3,
              Norm(world.rigid_body(slab).x - x0) * 1e3);
  // the slab's wrench is the floor's push less what the others press on it
  EXPECT_NEAR(f_slab[2], 2.0 * 9.81, 0.01 * 2.0 * 9.81);
  EXPECT_NEAR(f_top[2], w_top, 0.01 * w_top);
  EXPECT_NEAR(f_cube[2], w_cube, 0.01 * w_cube);
  EXPECT_LT(sink_top, 1e-4);
  EXPECT_LT(sink_cube, 1e-4);
  EXPECT_LT(Norm(world.rigid_body(slab).x - x0), 1e-5);
}

TEST(WorldCoupling, BadStaticMeshIsRejected) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  World world(backend.get(), Params(1e-6));
  SurfaceMesh m = Sheet(1, 2, 0);
  m.triangles[4] = 99;
  EXPECT_THROW(world.AddStaticMesh(m), Error);  // vertex out of range
  m = Sheet(1, 2, 0);
  m.triangles[1] = m.triangles[0];
  EXPECT_THROW(world.AddStaticMesh(m), Error);  // degenerate
  m = Sheet(1, 2, 0);
  m.x[0] = std::nan("");
  EXPECT_THROW(world.AddStaticMesh(m), Error);
  EXPECT_THROW(world.AddStaticMesh(Sheet(1, 2, 0), -0.1), Error);
}

}  // namespace
}  // namespace condsim
