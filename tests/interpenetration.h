// An independent interpenetration measure for FEM tests: a surface vertex strictly inside an
// element it does not belong to (barycentric test with a dense solve), at its distance to the
// nearest surface triangle not incident to it. Brute force over vertices and elements (with a
// bounding-box pre-check), sharing nothing with the detector.
#pragma once

#include <Eigen/Dense>
#include <algorithm>
#include <vector>

#include "models/collision/primitives.h"
#include "models/fem/tet_mesh.h"

namespace condsim::test {

// deepest vertex of `x` (3 per node, the mesh's numbering) inside a foreign element [m]
inline Scalar MaxPenetration(const TetMesh& mesh, const std::vector<Scalar>& x) {
  const std::vector<Index> tris = SurfaceTriangles(mesh), surface = SurfaceNodes(mesh);
  auto at = [&](Index i) { return LoadVec3(x.data(), i); };
  Scalar worst = 0;
  for (Index i : surface) {
    const Vec3 p = at(i);
    bool inside = false;
    for (Index e = 0; e < mesh.num_tets() && !inside; ++e) {
      const Index* t = mesh.tets.data() + 4 * std::size_t(e);
      if (t[0] == i || t[1] == i || t[2] == i || t[3] == i) continue;
      // outside the element's box: not inside it
      bool out = false;
      for (int d = 0; d < 3 && !out; ++d) {
        Scalar lo = at(t[0])[d], hi = lo;
        for (int k = 1; k < 4; ++k) {
          lo = std::min(lo, at(t[k])[d]);
          hi = std::max(hi, at(t[k])[d]);
        }
        out = p[d] < lo || p[d] > hi;
      }
      if (out) continue;
      Eigen::Matrix3d m;
      for (int k = 0; k < 3; ++k) {
        const Vec3 d = at(t[k + 1]) - at(t[0]);
        m.col(k) << d[0], d[1], d[2];
      }
      const Vec3 q = p - at(t[0]);
      const Eigen::Vector3d b = m.colPivHouseholderQr().solve(Eigen::Vector3d(q[0], q[1], q[2]));
      inside = b.minCoeff() > 1e-9 && b.sum() < 1 - 1e-9;
    }
    if (!inside) continue;
    Scalar depth = 1e30;
    for (std::size_t k = 0; k < tris.size(); k += 3) {
      if (tris[k] == i || tris[k + 1] == i || tris[k + 2] == i) continue;
      const Vec3 a = at(tris[k]), b = at(tris[k + 1]), c = at(tris[k + 2]);
      const Vec3 w = ClosestOnTriangle(p, a, b, c);
      depth = std::min(depth, Norm(p - (w[0] * a + w[1] * b + w[2] * c)));
    }
    worst = std::max(worst, depth);
  }
  return worst;
}

}  // namespace condsim::test
