// Points against triangles on the backend (models/collision/detector.h): the queries are FEM
// surface vertices, cable centres (with the cable radius) and rigid surface samples; the
// triangles are FEM surfaces, rigid mesh bodies and static meshes. Each hit becomes a contact
// under the contact rule: with a rigid virtual node on a rigid mesh, a barycentric virtual node
// on an FEM triangle, or an S-contact on a static mesh.
#pragma once

#include <memory>
#include <vector>

#include "models/collision/detector.h"
#include "models/world/bodies.h"
#include "models/world/contact_rule.h"
#include "models/world/nodalize.h"

namespace condsim {

class TriangleDetection {
 public:
  // the detector's scene from the world's bodies (once, at the first step)
  void Build(WorldBodies* w);
  // this step's hits; fem_x: the FEM bodies' positions (host), rx / rv: the rigid samples'
  // world positions and velocities (3 per sample, bodies in order)
  void Detect(const WorldBodies& w, const std::vector<std::vector<Scalar>>& fem_x, const std::vector<Scalar>& rx,
              const std::vector<Scalar>& rv, Nodalizer* nodes, ContactWriter* out);
  // rigid body k's contact samples (body frame) and the first of them among all rigid samples
  const std::vector<SurfacePoint>& samples(Index k) const { return rigid_samples_[std::size_t(k)]; }
  Index sample_first(Index k) const { return rigid_sample_first_[std::size_t(k)]; }

 private:
  // the detector's vertex ranges: FEM surfaces, cables, rigid samples, static meshes
  void AddFemSurfaces(const WorldBodies& w, DetectScene* sc, std::vector<std::vector<Index>>* adj);
  void AddCables(const WorldBodies& w, DetectScene* sc, std::vector<std::vector<Index>>* adj);
  void AddRigidSamples(const WorldBodies& w, DetectScene* sc, std::vector<std::vector<Index>>* adj);

  std::unique_ptr<Detector> detector_;
  // per query: its kind, index in its kind and local node / segment / sample
  std::vector<BodyKind> q_kind_;
  std::vector<Index> q_body_, q_local_;
  // per triangle: its owner's kind (rigid, FEM, static mesh), index in the kind, 3 local vertices
  std::vector<BodyKind> t_owner_kind_;
  std::vector<Index> t_body_, t_nodes_;
  std::vector<Array<Index>> gather_x_, gather_v_;  // per FEM body, then per cable
  std::vector<Index> gather_offset_;
  Index rigid_vertex_offset_ = 0;
  std::vector<Index> rigid_sample_first_;
  std::vector<std::vector<SurfacePoint>> rigid_samples_;
};

}  // namespace condsim
