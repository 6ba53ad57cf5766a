// Mass-spring nets on a ground plane.
#include "models/mass_spring/mass_spring.h"

#include <cmath>

#include "condsim/error.h"

namespace condsim {

MassSpringSystem MakeMassSpringGrid(Index nx, Index ny, Scalar h, Scalar m, Scalar k, Scalar t,
                                    Scalar g, Scalar mu, const std::vector<Scalar>& v0) {
  CONDSIM_CHECK(nx >= 1 && ny >= 1, "mass-spring grid: size " << nx << " x " << ny << " must be >= 1 x 1");
  CONDSIM_CHECK(h > 0 && m > 0 && k >= 0 && t > 0 && mu >= 0,
                "mass-spring grid: need h, m, t > 0 and k, mu >= 0");
  const Index n = CheckedIndex(std::size_t(nx) * ny, "mass-spring grid: nodes");
  CONDSIM_CHECK(v0.empty() || v0.size() == std::size_t(3) * n, "mass-spring grid: v0 needs 3 values per node");
  auto id = [nx](Index i, Index j) { return j * nx + i; };
  std::vector<std::pair<Index, Index>> coords;
  for (Index j = 0; j < ny; ++j)
    for (Index i = 0; i < nx; ++i) {
      const Index a = id(i, j);
      coords.push_back({a, a});
      if (i > 0) coords.push_back({a, id(i - 1, j)});
      if (i + 1 < nx) coords.push_back({a, id(i + 1, j)});
      if (j > 0) coords.push_back({a, id(i, j - 1)});
      if (j + 1 < ny) coords.push_back({a, id(i, j + 1)});
    }
  MassSpringSystem s;
  s.a = BlockMatrix(BlockPattern::FromCoordinates(3, n, n, coords));
  s.b.assign(std::size_t(3) * n, 0);
  // A = 2M + (t^2/2) K (eq. 9 times t); springs at rest: K e = 0, so b = 2M v_k + t f
  const Scalar ks = t * t / 2 * k;
  const Mat3 frame = ContactFrame(Vec3(0, 0, 1));
  for (Index a = 0; a < n; ++a) {
    const Index i = a % nx, j = a / nx;
    const Index degree = (i > 0) + (i + 1 < nx) + (j > 0) + (j + 1 < ny);
    const Scalar d = 2 * m + ks * Scalar(degree);
    const Scalar diag[9] = {d, 0, 0, 0, d, 0, 0, 0, d};
    const Scalar off[9] = {-ks, 0, 0, 0, -ks, 0, 0, 0, -ks};
    s.a.AddToBlock(a, a, diag);
    for (const Index nb : {i > 0 ? id(i - 1, j) : -1, i + 1 < nx ? id(i + 1, j) : -1,
                           j > 0 ? id(i, j - 1) : -1, j + 1 < ny ? id(i, j + 1) : -1}) {
      if (nb >= 0) s.a.AddToBlock(a, nb, off);
    }
    for (int c = 0; c < 3; ++c) s.b[3 * std::size_t(a) + c] = v0.empty() ? 0 : 2 * m * v0[3 * std::size_t(a) + c];
    s.b[3 * std::size_t(a) + 2] += -t * m * g;
    s.contacts.Add(a, -1, frame, 0, mu, mu);
  }
  return s;
}

}  // namespace condsim
