// Cable motion at t = 10 ms against references: the joints' geometric stiffness (eq. 9's E,
// docs/rod.md) must not drag the cable's translation. A 0.4 m cable (30 segments, r 2 mm,
// E 2.954 MPa: the cable_winding material) bent into a half circle with a straight rest shape,
// falling freely, and laid across a horizontal cylinder. References: the analytic free fall
// g t^2 / 2 of the centre of mass (the joint forces cancel and the midpoint rule integrates
// constant gravity exactly; tolerance 0.1 % for the solver's residual), and the draped cable's
// lowest point at t = 0.5 ms (the fine-step reference; 10 %).
#include <gtest/gtest.h>

#include <cstdio>

#include "models/world/world.h"
#include "test_util.h"

namespace condsim {
namespace {

constexpr double kLength = 0.4;
constexpr Index kSegments = 30;

RodMaterial CableMaterial() {
  RodMaterial m;
  m.radius = 0.002;
  m.young = 2.954e6;
  m.poisson = 0.49;
  m.density = 1259;
  return m;
}

struct Drop {
  double lowest;  // drop of the lowest segment centre [m]
  double centre;  // drop of the centre of mass [m]
};

// the drops at the given times, stepping at dt, with the material's geometric-stiffness scale.
// With the cylinder: a straight cable laid across it (radius 2 cm, friction 0.3), draping under
// gravity. Without: free fall of a cable bent into a half circle (radius L / pi) in the vertical
// plane while its rest shape is straight, so its joints are stressed and it unbends as it falls
std::vector<Drop> Drops(double dt, double geo_scale, bool cylinder, const std::vector<double>& times, bool geometric = true) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  WorldParams params;
  params.dt = dt;
  params.cond.theta_threshold = 1e-7;
  params.cond.max_iterations = 20000;
  World world(backend.get(), params);
  RodMaterial mat = CableMaterial();
  mat.geometric_stiffness_scale = geo_scale;
  mat.geometric_stiffness = geometric;
  const Scalar rc = 0.02;  // cylinder radius [m]
  if (cylinder) {
    // a horizontal cylinder along y through the origin; the cable lies across it, centred
    StaticShape post;
    post.type = ShapeType::kCapsule;
    post.center = Vec3(0, 0, 0);
    post.orientation = FromRotationVector(Vec3(1.5707963267948966, 0, 0));
    post.size = Vec3(rc, 0.1, 0);
    post.mu1 = post.mu2 = 0.3;
    world.AddStatic(post);
  }
  const Scalar z0 = cylinder ? rc + mat.radius + 1e-4 : mat.radius;
  const Index cable = world.AddRod(MakeStraightRod(Vec3(-kLength / 2, 0, z0), Vec3(1, 0, 0), kLength, kSegments), mat,
                                   RodEnd(), RodEnd(), "cable", 0.3, false);
  if (!cylinder) {
    std::vector<Vec3> arc;
    for (int k = 0; k <= 64; ++k) {
      const double a = 3.14159265358979323846 * k / 64, rad = kLength / 3.14159265358979323846;
      arc.push_back(Vec3(-rad * std::cos(a), 0, z0 + rad * std::sin(a)));
    }
    const RodGeometry bent = MakePolylineRod(arc, kSegments);
    std::vector<Scalar> x, q;
    for (Index s = 0; s < kSegments; ++s) {
      for (int c = 0; c < 3; ++c) x.push_back(bent.centers[s][c]);
      const Quat f = bent.frames[s];
      q.insert(q.end(), {f.w, f.x, f.y, f.z});
    }
    world.rod_model(cable).positions().CopyFromHost(x);
    world.rod_model(cable).orientations().CopyFromHost(q);
  }
  auto measure = [&]() {
    const std::vector<Scalar> x = world.RodPositions(cable);
    double lowest = 1e9, mean = 0;
    for (std::size_t i = 2; i < x.size(); i += 3) {
      lowest = std::min(lowest, double(x[i]));
      mean += x[i] / kSegments;
    }
    return Drop{lowest, mean};
  };
  const Drop start = measure();
  std::vector<Drop> drop;
  int step = 0;
  for (double t : times) {
    const int until = static_cast<int>(std::lround(t / dt));
    for (; step < until; ++step) {
      const StepStats st = world.Step();
      EXPECT_TRUE(st.cond.converged) << "dt " << dt << " step " << step;
    }
    const Drop now = measure();
    drop.push_back(Drop{start.lowest - now.lowest, start.centre - now.centre});
  }
  return drop;
}

// free fall: the centre of mass follows g t^2 / 2 (internal forces and E cancel in the sum;
// tolerance 0.1 %; the former E on the centres fell 2.4 % short at 0.2 s and 16 % at 1 s) at
// t = 0.2 s and 1 s, with the full and the scaled E. Known gap (printed, not asserted;
// docs/rod.md): the unbending itself is slow at 10 ms (the lowest point relative to the centre of
// mass at 0.2 s: -0.3 mm at 10 ms with the full E, -0.9 mm with E x 0.2, -22 mm at 0.5 ms)
TEST(RodDrape, BentCableFallsFreely) {
  const std::vector<double> times = {0.2, 1.0};
  for (double scale : {1.0, 0.2}) {
    const std::vector<Drop> drop = Drops(0.01, scale, false, times);
    for (std::size_t k = 0; k < times.size(); ++k) {
      const double exact = 0.5 * 9.81 * times[k] * times[k];
      std::printf("[ fall     ] E x %.1f, t = %.1f s: centre of mass drop %.6f m (g t^2/2 = %.6f m); lowest point rel. to the "
                  "centre of mass %.4f m\n", scale, times[k], drop[k].centre, exact, drop[k].lowest - drop[k].centre);
      EXPECT_NEAR(drop[k].centre, exact, 1e-3 * exact) << "E x " << scale;
    }
  }
}

// draping over the cylinder with geometric_stiffness_scale 0.2: the lowest point at t = 10 ms
// against the same scene at t = 0.5 ms (the fine-step reference), 10 % at t = 1 s (measured 0.98
// of the reference; the full E gives 0.59 and fails). Known gap (printed, not asserted;
// docs/rod.md): at t = 0.2 s the cable is still slow (0.40 of the reference; 0.18 with the full E)
TEST(RodDrape, CableDrapesOverCylinderLikeFineSteps) {
  const std::vector<double> times = {0.2, 1.0};
  const double scale = 0.2;
  const std::vector<Drop> coarse = Drops(0.01, scale, true, times);
  const std::vector<Drop> fine = Drops(0.0005, scale, true, times);
  for (std::size_t k = 0; k < times.size(); ++k)
    std::printf("[ drape    ] t = %.1f s: lowest point drop %.5f m at 10 ms, %.5f m at 0.5 ms, ratio %.3f\n", times[k],
                coarse[k].lowest, fine[k].lowest, coarse[k].lowest / fine[k].lowest);
  EXPECT_NEAR(coarse[1].lowest, fine[1].lowest, 0.1 * fine[1].lowest);
}

// draping without the geometric stiffness (`geometric_stiffness: false`): at t = 0.2 s the lowest
// point at 10 ms against the 0.5 ms run, 3 % (the issue asks 10 %; measured 171.7 against
// 172.5 mm, 0.995; with the geometric stiffness the same ratio is 0.18). The cable
// then has two to four contact nodes inside its stiff chain: with the chain step's Jacobi form
// (CondParams::chain_gauss_seidel false) the COND iteration became NaN at step 20
// (docs/solver.md "Order of the chain step"). Not yet usable beyond ~0.5 s at 10 ms: the strain
// drift of the stretch/shear joints (docs/rod.md, "Known limits")
TEST(RodDrape, CableWithoutGeometricStiffnessDrapesLikeFineStepsAtFirst) {
  const std::vector<double> times = {0.2};
  const std::vector<Drop> coarse = Drops(0.01, 1, true, times, false);
  const std::vector<Drop> fine = Drops(0.0005, 1, true, times, false);
  std::printf("[ drape    ] without E, t = 0.2 s: lowest point drop %.5f m at 10 ms, %.5f m at 0.5 ms, ratio %.3f\n", coarse[0].lowest,
              fine[0].lowest, coarse[0].lowest / fine[0].lowest);
  EXPECT_NEAR(coarse[0].lowest, fine[0].lowest, 0.03 * fine[0].lowest);
}

}  // namespace
}  // namespace condsim
