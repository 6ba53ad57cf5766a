// Tetrahedral mesh validation and generators.
#include "models/fem/tet_mesh.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <sstream>

#include "condsim/error.h"

namespace condsim {

Scalar TetVolume(const TetMesh& mesh, Index e) {
  const Index* t = mesh.tets.data() + 4 * std::size_t(e);
  const Vec3 x0 = mesh.Node(t[0]);
  return Dot(mesh.Node(t[1]) - x0, Cross(mesh.Node(t[2]) - x0, mesh.Node(t[3]) - x0)) / 6;
}

std::vector<std::string> ValidateMesh(const TetMesh& mesh, const std::string& source) {
  const std::string where = source + ": ";
  CONDSIM_CHECK(mesh.x.size() % 3 == 0 && mesh.tets.size() % 4 == 0, where << "malformed mesh arrays");
  const Index n = mesh.num_nodes(), m = mesh.num_tets();
  CONDSIM_CHECK(m > 0, where << "the mesh has no tetrahedra");
  for (std::size_t k = 0; k < mesh.x.size(); ++k) {
    CONDSIM_CHECK(std::isfinite(mesh.x[k]), where << "node " << k / 3 << " has a non-finite coordinate");
  }
  std::vector<char> used(static_cast<std::size_t>(n), 0);
  double edge_sum = 0;
  for (Index e = 0; e < m; ++e) {
    const Index* t = mesh.tets.data() + 4 * std::size_t(e);
    for (int a = 0; a < 4; ++a) {
      CONDSIM_CHECK(t[a] >= 0 && t[a] < n, where << "tetrahedron " << e << " refers to node " << t[a]
                                                 << ", but the mesh has nodes 0.." << n - 1);
      for (int b = 0; b < a; ++b) {
        CONDSIM_CHECK(t[a] != t[b], where << "tetrahedron " << e << " repeats node " << t[a]);
      }
      used[t[a]] = 1;
    }
    edge_sum += Norm(mesh.Node(t[1]) - mesh.Node(t[0]));
  }
  const double h = edge_sum / m;
  Index inverted = 0, degenerate = 0, first_inverted = -1, first_degenerate = -1;
  for (Index e = 0; e < m; ++e) {
    const double v = TetVolume(mesh, e);
    if (std::fabs(v) <= 1e-12 * h * h * h) {
      if (degenerate++ == 0) first_degenerate = e;
    } else if (v < 0) {
      if (inverted++ == 0) first_inverted = e;
    }
  }
  CONDSIM_CHECK(degenerate == 0, where << degenerate << " zero-volume tetrahedra, the first is element "
                                       << first_degenerate << " (volume " << TetVolume(mesh, first_degenerate) << " m^3)");
  CONDSIM_CHECK(inverted == 0, where << inverted << " inverted tetrahedra (negative volume), the first is element "
                                     << first_inverted << " (volume " << TetVolume(mesh, first_inverted) << " m^3)");
  std::vector<std::string> warnings;
  Index unused = 0, first_unused = -1;
  for (Index i = 0; i < n; ++i) {
    if (!used[i] && unused++ == 0) first_unused = i;
  }
  if (unused > 0) {
    std::ostringstream w;
    w << where << unused << " node(s) belong to no tetrahedron (the first is node " << first_unused << ")";
    warnings.push_back(w.str());
  }
  return warnings;
}

TetMesh MakeBoxMesh(const Vec3& origin, const Vec3& size, Index nx, Index ny, Index nz) {
  CONDSIM_CHECK(nx >= 1 && ny >= 1 && nz >= 1, "box mesh: resolution " << nx << " x " << ny << " x " << nz << " must be >= 1");
  CONDSIM_CHECK(size[0] > 0 && size[1] > 0 && size[2] > 0, "box mesh: size must be positive");
  TetMesh mesh;
  auto id = [&](Index i, Index j, Index k) { return (k * (ny + 1) + j) * (nx + 1) + i; };
  CheckedIndex(std::size_t(nx + 1) * (ny + 1) * (nz + 1), "box mesh: nodes");
  CheckedIndex(std::size_t(nx) * ny * nz * 24, "box mesh: tetrahedron indices");
  for (Index k = 0; k <= nz; ++k)
    for (Index j = 0; j <= ny; ++j)
      for (Index i = 0; i <= nx; ++i) {
        mesh.x.push_back(origin[0] + size[0] * i / nx);
        mesh.x.push_back(origin[1] + size[1] * j / ny);
        mesh.x.push_back(origin[2] + size[2] * k / nz);
      }
  // the 6 tetrahedra of the Freudenthal split: paths from corner 000 to 111 through the axes
  const int paths[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (Index k = 0; k < nz; ++k)
    for (Index j = 0; j < ny; ++j)
      for (Index i = 0; i < nx; ++i)
        for (const auto& p : paths) {
          Index c[3] = {i, j, k};
          Index t[4];
          t[0] = id(c[0], c[1], c[2]);
          for (int s = 0; s < 3; ++s) {
            ++c[p[s]];
            t[s + 1] = id(c[0], c[1], c[2]);
          }
          // odd permutations of the axes give negative orientation: swap two nodes
          const bool odd = (p[0] == 0 && p[1] == 2) || (p[0] == 1 && p[1] == 0) || (p[0] == 2 && p[1] == 1);
          if (odd) std::swap(t[2], t[3]);
          mesh.tets.insert(mesh.tets.end(), t, t + 4);
        }
  return mesh;
}

TetMesh MakeSphereMesh(const Vec3& center, Scalar radius, Scalar element_size) {
  CONDSIM_CHECK(radius > 0 && element_size > 0, "sphere mesh: radius and element size must be positive");
  const Index cells = std::max<Index>(2, static_cast<Index>(std::ceil(2 * radius / element_size)));
  TetMesh mesh = MakeBoxMesh(Vec3(-1, -1, -1), Vec3(2, 2, 2), cells, cells, cells);
  // cube [-1,1]^3 onto the unit ball: x' = x sqrt(1 - y^2/2 - z^2/2 + y^2 z^2/3) (and cyclic)
  for (std::size_t i = 0; i < mesh.x.size(); i += 3) {
    const Scalar x = mesh.x[i], y = mesh.x[i + 1], z = mesh.x[i + 2];
    const Scalar x2 = x * x, y2 = y * y, z2 = z * z;
    mesh.x[i] = center[0] + radius * x * std::sqrt(1 - y2 / 2 - z2 / 2 + y2 * z2 / 3);
    mesh.x[i + 1] = center[1] + radius * y * std::sqrt(1 - z2 / 2 - x2 / 2 + z2 * x2 / 3);
    mesh.x[i + 2] = center[2] + radius * z * std::sqrt(1 - x2 / 2 - y2 / 2 + x2 * y2 / 3);
  }
  return mesh;
}

}  // namespace condsim

namespace condsim {

std::vector<Index> SurfaceTriangles(const TetMesh& mesh) {
  // faces of a positively oriented tet (opposite vertex last) with outward normals
  static const int kFace[4][3] = {{1, 2, 3}, {0, 3, 2}, {0, 1, 3}, {0, 2, 1}};
  std::map<std::array<Index, 3>, std::pair<int, std::array<Index, 3>>> faces;
  for (Index e = 0; e < mesh.num_tets(); ++e) {
    const Index* t = mesh.tets.data() + 4 * std::size_t(e);
    for (const auto& f : kFace) {
      std::array<Index, 3> tri{t[f[0]], t[f[1]], t[f[2]]};
      std::array<Index, 3> key = tri;
      std::sort(key.begin(), key.end());
      auto [it, inserted] = faces.emplace(key, std::make_pair(1, tri));
      if (!inserted) ++it->second.first;
    }
  }
  std::vector<Index> out;
  for (const auto& [key, value] : faces) {
    if (value.first != 1) continue;
    out.insert(out.end(), value.second.begin(), value.second.end());
  }
  return out;
}

std::vector<Index> SurfaceNodes(const TetMesh& mesh) {
  std::vector<Index> tri = SurfaceTriangles(mesh);
  std::sort(tri.begin(), tri.end());
  tri.erase(std::unique(tri.begin(), tri.end()), tri.end());
  return tri;
}

}  // namespace condsim
