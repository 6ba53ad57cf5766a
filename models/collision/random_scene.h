// Random detection scenes for tests and benchmarks: jittered surfaces of box meshes (owners)
// with their surface vertices as queries, over a static triangulated sheet.
#pragma once

#include <algorithm>
#include <random>
#include <vector>

#include "models/collision/detector.h"
#include "models/fem/tet_mesh.h"

namespace condsim {

struct DetectSceneData {
  DetectScene scene;
  std::vector<Scalar> x, v;  // 3 per vertex
};

// `bodies` owners of box surfaces (n x n x n cells, edge `size`; odd owners have two boxes, with
// self-contact on: element neighbours excluded) at random poses in a cube of side `spread`,
// velocities up to `speed`, radii up to `max_radius` on every other query; a static sheet at
// z = spread / 2 as the last owner
inline DetectSceneData RandomDetectScene(std::mt19937_64& rng, int bodies, Index n, Scalar size, Scalar spread,
                                         Scalar speed, Scalar max_radius) {
  std::uniform_real_distribution<Scalar> u(0, 1);
  DetectSceneData d;
  DetectScene& s = d.scene;
  std::vector<std::vector<Index>> adj;
  for (int piece = 0; piece < bodies + bodies / 2; ++piece) {
    // owners 0 .. bodies-1; odd owners have a second box (the same owner: self-contact)
    const int b = piece < bodies ? piece : 2 * (piece - bodies) + 1;
    const TetMesh mesh = MakeBoxMesh(Vec3(), Vec3(size, size, size), n, n, n);
    const std::vector<Index> surface = SurfaceNodes(mesh), tris = SurfaceTriangles(mesh);
    const Index first = s.num_vertices();
    std::vector<Index> vertex_of(std::size_t(mesh.num_nodes()), -1);
    for (std::size_t k = 0; k < surface.size(); ++k) vertex_of[surface[k]] = first + static_cast<Index>(k);
    const Quat q = FromRotationVector(Vec3(3 * u(rng), 3 * u(rng), 3 * u(rng)));
    const Vec3 c(spread * u(rng), spread * u(rng), spread * u(rng));
    const Vec3 vel(speed * (2 * u(rng) - 1), speed * (2 * u(rng) - 1), speed * (2 * u(rng) - 1));
    // neighbours through elements, restricted to the surface
    std::vector<std::vector<Index>> nb(std::size_t(mesh.num_nodes()));
    for (Index e = 0; e < mesh.num_tets(); ++e)
      for (int a = 0; a < 4; ++a)
        for (int bb = 0; bb < 4; ++bb) nb[mesh.tets[4 * std::size_t(e) + a]].push_back(mesh.tets[4 * std::size_t(e) + bb]);
    for (std::size_t k = 0; k < surface.size(); ++k) {
      // squashed towards its centre by up to 20 % so opposite faces can come close
      const Vec3 p = c + Rotate(q, (Scalar(0.8) + Scalar(0.2) * u(rng)) * (mesh.Node(surface[k]) - Vec3(size / 2, size / 2, size / 2)));
      for (int a = 0; a < 3; ++a) {
        d.x.push_back(p[a]);
        d.v.push_back(vel[a] + Scalar(0.1) * speed * (2 * u(rng) - 1));
      }
      s.vertex_owner.push_back(b);
      s.query.push_back(first + static_cast<Index>(k));
      s.radius.push_back(k % 2 == 0 ? 0 : max_radius * u(rng));
      std::vector<Index> list;
      for (Index j : nb[surface[k]])
        if (vertex_of[j] >= 0) list.push_back(vertex_of[j]);
      std::sort(list.begin(), list.end());
      list.erase(std::unique(list.begin(), list.end()), list.end());
      adj.push_back(list);
    }
    for (Index t : tris) s.tri.push_back(vertex_of[t]);
    for (std::size_t t = 0; t < tris.size() / 3; ++t) s.tri_owner.push_back(b);
    if (piece < bodies) {
      s.self_contact.push_back(b % 2 == 1 ? 1 : 0);
      s.depth_limit.push_back(Scalar(0.25) * size / Scalar(n));
    }
  }
  // the static sheet: a 10 x 10 grid of squares over [0, spread]^2 at z = spread / 2
  const Index first = s.num_vertices(), m = 10;
  for (Index i = 0; i <= m; ++i)
    for (Index j = 0; j <= m; ++j) {
      d.x.insert(d.x.end(), {spread * Scalar(i) / m, spread * Scalar(j) / m, spread / 2});
      d.v.insert(d.v.end(), {0, 0, 0});
      s.vertex_owner.push_back(bodies);
      adj.emplace_back();
    }
  for (Index i = 0; i < m; ++i)
    for (Index j = 0; j < m; ++j) {
      const Index a = first + i * (m + 1) + j, b = a + m + 1;
      s.tri.insert(s.tri.end(), {a, b, b + 1, a, b + 1, a + 1});
      s.tri_owner.insert(s.tri_owner.end(), {bodies, bodies});
    }
  s.self_contact.push_back(0);
  s.depth_limit.push_back(spread / m / 4);
  s.adj_ptr.assign(1, 0);
  for (const auto& a : adj) {
    s.adj.insert(s.adj.end(), a.begin(), a.end());
    s.adj_ptr.push_back(static_cast<Index>(s.adj.size()));
  }
  return d;
}

}  // namespace condsim
