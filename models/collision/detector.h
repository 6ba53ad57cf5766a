// Point-vs-triangle contact detection on the backend (CPU or GPU, one algorithm): query points
// with radii (FEM surface vertices, cable segment centres, rigid surface samples) against
// triangles (FEM surface triangles, static triangle meshes), each vertex and triangle belonging
// to an owner (a body or a mesh). Every Detect() builds a uniform grid over the triangles' boxes
// (cell: max(RMS box, largest box / 4)), sorts its (cell key, triangle) pairs, and
// runs the narrow phase per query (PointQueryOp: one contact per query and owner, the nearest
// admissible triangle). Output in canonical order — by query, then owner — so it depends on
// neither threads nor timing; CPU and CUDA give the same contact set. SI units.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "condsim/backend.h"
#include "condsim/math.h"
#include "condsim/record_arrays.h"
#include "models/collision/detect_ops.h"

namespace condsim {

class DetectKernels;
CONDSIM_RECORD_ARRAYS(DetectSceneArrays, DetectSceneView, CONDSIM_DETECT_SCENE_FIELDS)
CONDSIM_RECORD_ARRAYS(ContactPlanArrays, ContactPlanView, CONDSIM_CONTACT_PLAN_FIELDS)
CONDSIM_RECORD_ARRAYS(ContactRowArrays, ContactRowView, CONDSIM_CONTACT_ROW_FIELDS)

// the scene's topology (fixed for the detector's life)
struct DetectScene {
  CONDSIM_DETECT_SCENE_FIELDS(CONDSIM_RECORD_HOST_MEMBER)

  Index num_vertices() const { return static_cast<Index>(vertex_owner.size()); }
  Index num_owners() const { return static_cast<Index>(self_contact.size()); }
  // throws condsim::Error naming the field
  void Validate() const;
};

// the contacts of one Detect(), on the host
struct DetectResult {
  std::vector<Index> query, tri;  // per contact
  std::vector<Scalar> gap;        // [m]
  std::vector<Scalar> w, n;       // 3 per contact: weights on the triangle, normal towards the query
  std::vector<Scalar> tx;         // 9 per contact: the triangle's vertex positions [m]
  Index size() const { return static_cast<Index>(query.size()); }
};

// the query points within reach of an analytic shape (Detector::ShapeCandidates), on the host
struct NodeCandidates {
  std::vector<Index> query;   // ascending
  std::vector<Scalar> x;      // 3 per point: its position [m] (empty until read)
  // per point bit k: its environment's k-th shape is in reach (NodeShapeFlagOp); when some
  // environment has more shapes than the bits, empty, and v (3 per point [m/s]) comes instead
  std::vector<std::uint64_t> reach;
  std::vector<Scalar> v;
  std::vector<Scalar> pen;  // per point: its deepest S-contact penetration [m] (empty until read)
  Index size() const { return static_cast<Index>(query.size()); }
};

class Detector {
 public:
  Detector(Backend* backend, const DetectScene& scene);
  ~Detector();

  // vertex positions and velocities (3 per vertex): fill them before Detect()
  Array<Scalar>& x() { return x_; }
  Array<Scalar>& v() { return v_; }
  // vertices [offset, offset + n) from a body's positions x[idx_x[k]] and velocities
  // v[idx_v[k]] (3 values each, on the backend)
  void Gather(Index offset, const Array<Index>& idx_x, const Array<Index>& idx_v, const Array<Scalar>& x,
              const Array<Scalar>& v);
  // vertices [offset, offset + n) from the host (3 values each for x and v)
  void Upload(Index offset, const std::vector<Scalar>& x, const std::vector<Scalar>& v);
  // the contacts with gap <= |v_p - v_q| dt + margin (see PointQueryOp)
  const DetectResult& Detect(Scalar dt, Scalar margin);
  // analytic shapes (static shapes, rigid bodies' shapes) and per environment e the shapes
  // list[env_ptr[e]] .. list[env_ptr[e + 1] - 1] its points may touch (once: the topology)
  void SetShapes(const std::vector<NodeShape>& shapes, const std::vector<Index>& env_ptr, const std::vector<Index>& list);
  // shapes [first, first + n) anew from the host (the rigid bodies' poses and velocities)
  void UpdateShapes(Index first, const std::vector<NodeShape>& shapes);
  // the query points q < n (whose query point is vertex q) within reach of an analytic shape of
  // their environment (NodeShapeFlagOp); only these points are downloaded: index, position and
  // the shapes in reach (36 B each), or the velocity in place of the last (52 B) when an
  // environment has more than 64 shapes. positions = false: index and shapes only when the shapes
  // fit the bits (4 B and a byte per 8 shapes of the environment with the most each);
  // CandidatePositions / CandidatePenetrations / CandidateMaxPenetration read the rest
  const NodeCandidates& ShapeCandidates(Index n, Scalar dt, Scalar margin, bool positions = true);
  // the last ShapeCandidates' positions and deepest penetrations (one read each, when first asked)
  const NodeCandidates& CandidatePositions();
  const NodeCandidates& CandidatePenetrations();
  // the deepest penetration of them all, or 0 when none is deeper (one read of 8 B)
  Scalar CandidateMaxPenetration();
  // per query point q < n (those ShapeCandidates tests) its node in the solver's numbering, for
  // the rows of the plans' runs (uploaded when it changes)
  void SetQueryNodes(const std::vector<Index>& nodes);
  // a step's contact record on the backend (`out`, every field sized) from the host's plan, at
  // most one upload (its explicit rows and the host's numbers): the rows of its runs made from the
  // points of the last ShapeCandidates (ContactRunOp: their reach bits, one scan), the S-contacts
  // against the analytic shapes remade from those points (ContactPlanFillOp), the other contacts
  // copied. angle: the tangents' rotation about the normal [rad] (ContactWriter)
  void WriteContacts(const ContactPlan& plan, Scalar dt, Scalar angle, const ContactOutView& out);
  // capacity for the plans of up to `contacts` contacts (no allocation within it)
  void ReservePlan(Index contacts);
  const DetectResult& result() const { return result_; }
  // the last ShapeCandidates' points, as read so far
  const NodeCandidates& candidates() const { return candidates_; }
  // broad-phase size of the last Detect(): (cell, triangle) pairs and the cell edge [m]
  Index num_pairs() const { return num_pairs_; }
  Scalar cell() const { return cell_; }
  const DetectScene& scene() const { return scene_; }

 private:
  Backend* backend_;
  DetectScene scene_;
  std::unique_ptr<DetectKernels> kernels_;
  DetectSceneArrays arrays_;  // the scene on the backend
  Array<Scalar> x_, v_, speed_, lo_, hi_, ext_;
  Array<Index> count_, offset_, items_;
  Array<std::uint64_t> keys_;
  Array<Index> slot_tri_, qcount_, qoffset_, out_query_, out_tri_;
  Array<Scalar> slot_gap_, slot_w_, slot_n_, out_gap_, out_w_, out_n_, out_tx_;
  Scalar max_radius_ = 0;
  Index num_pairs_ = 0;
  Scalar cell_ = 0;
  int grid_bits_ = 21;  // DetectGrid::bits
  DetectResult result_;
  // the analytic shapes per environment and the flagged points
  Array<NodeShape> shapes_;
  Array<Index> shape_env_ptr_, shape_list_, node_flag_, node_offset_, node_query_;
  Array<Scalar> node_x_, node_v_;
  Array<std::uint64_t> node_reach_, node_out_reach_;
  Array<Scalar> node_pen_, node_out_pen_, node_pen_clamped_;
  Array<unsigned char> node_reach_bytes_;  // reach_bytes_ per flagged point: the reach bits' low bytes
  Index reach_bytes_ = 8;                  // bytes that hold the most shapes of an environment
  bool reach_bits_ = true;  // every environment's shapes fit the reach bits
  Index shape_queries_ = 0;  // query points q < shape_queries_ have vertex q
  NodeCandidates candidates_;
  std::vector<unsigned char> reach_host_;  // the reach bits' bytes as read
  ContactPlanArrays plan_;
  ContactRowArrays rows_;
  Array<Index> point_count_, point_offset_, query_node_;  // per flagged point; per query point
  std::vector<Index> query_node_host_;
};

}  // namespace condsim
