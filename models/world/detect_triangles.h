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
  // this step's vertices: FEM surfaces and cable centres copied on the backend, rx / rv: the
  // rigid samples' world positions and velocities (3 per sample, bodies in order) uploaded
  void Gather(const WorldBodies& w, const std::vector<Scalar>& rx, const std::vector<Scalar>& rv);
  // the analytic shapes the FEM surface nodes and cable centres may touch: the static shapes and
  // the rigid bodies' analytic (not mesh) shapes, per environment (once, after Build)
  void SetShapes(const WorldBodies& w, const std::vector<std::vector<Index>>& env_statics,
                 const std::vector<std::vector<Index>>& env_rigid);
  // after Gather: the FEM surface nodes and cable centres within reach of an analytic shape
  // (the rigid bodies' poses uploaded first), queries ascending: FEM bodies' surfaces, then cables
  const NodeCandidates& ShapeCandidates(const WorldBodies& w, bool positions = true);
  // after Gather: this step's points-against-triangles contacts
  void Detect(const WorldBodies& w, Nodalizer* nodes, ContactWriter* out);
  // the backend detector (after Build; FEM bodies, cables or rigid bodies make one)
  bool has_detector() const { return detector_ != nullptr; }
  Detector& detector() { return *detector_; }
  const Detector& detector() const { return *detector_; }
  // query q's kind, index in its kind and local node / segment / sample
  BodyKind query_kind(Index q) const { return q_kind_[std::size_t(q)]; }
  Index query_body(Index q) const { return q_body_[std::size_t(q)]; }
  Index query_local(Index q) const { return q_local_[std::size_t(q)]; }
  // the query points of FEM surface nodes and cable centres: 0 .. num_point_queries() - 1
  Index num_point_queries() const { return rigid_vertex_offset_; }
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
  Index rigid_vertex_offset_ = 0;  // the FEM surface and cable vertices (queries) come before it
  Index num_statics_ = 0;           // the analytic shapes: the static shapes, then one per rigid body
  std::vector<Index> rigid_sample_first_;
  std::vector<std::vector<SurfacePoint>> rigid_samples_;
};

}  // namespace condsim
