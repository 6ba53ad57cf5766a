// Tetrahedral and surface meshes: storage, validation and procedural generators (SI units: metres).
#pragma once

#include <string>
#include <vector>

#include "condsim/core.h"
#include "condsim/math.h"

namespace condsim {

struct TetMesh {
  std::vector<Scalar> x;     // node positions, 3 per node [m]
  std::vector<Index> tets;   // 4 node indices per tetrahedron, positive orientation:
                             // (x1 - x0) . ((x2 - x0) x (x3 - x0)) > 0
  Index num_nodes() const { return static_cast<Index>(x.size() / 3); }
  Index num_tets() const { return static_cast<Index>(tets.size() / 4); }
  Vec3 Node(Index i) const { return Vec3(x[3 * std::size_t(i)], x[3 * std::size_t(i) + 1], x[3 * std::size_t(i) + 2]); }
};

// a closed triangle surface (3 coordinates per vertex, 3 indices per triangle; outward
// counter-clockwise) [m]
struct SurfaceMesh {
  std::vector<double> x;
  std::vector<Index> triangles;
};

// signed volume of tetrahedron e [m^3]
Scalar TetVolume(const TetMesh& mesh, Index e);

// checks a mesh read from `source` (a file name or a generator's name); throws condsim::Error
// naming the source for: no elements, non-finite coordinates, indices out of range, repeated
// nodes in an element, degenerate (|V| <= 1e-12 * h^3 for the mesh's mean edge length h) and
// inverted (V < 0) tetrahedra (the count and the first offender). Returns warnings (unused
// nodes) as sentences.
std::vector<std::string> ValidateMesh(const TetMesh& mesh, const std::string& source);

// a box [origin, origin + size] cut into nx x ny x nz cells of 6 tetrahedra each (the
// Freudenthal split along the main diagonal: conforming across cells)
TetMesh MakeBoxMesh(const Vec3& origin, const Vec3& size, Index nx, Index ny, Index nz);

// a ball of radius r centred at c, from a cube grid of about 2r / h cells per side mapped onto
// the ball (the cube-to-sphere map keeps every element positively oriented)
TetMesh MakeSphereMesh(const Vec3& center, Scalar radius, Scalar element_size);

}  // namespace condsim

namespace condsim {

// the boundary of a tetrahedral mesh: faces that belong to one element only, 3 node indices
// per triangle, ordered so that the normal (x1 - x0) x (x2 - x0) points out of the body
std::vector<Index> SurfaceTriangles(const TetMesh& mesh);
// the nodes on the boundary, ascending
std::vector<Index> SurfaceNodes(const TetMesh& mesh);

}  // namespace condsim
