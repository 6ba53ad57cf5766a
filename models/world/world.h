// A scene stepped in time (paper Alg. 1): static shapes, rigid bodies (with joints and drives),
// FEM bodies and cables coupled by contacts. Every step: detect contacts (nodes and rigid surface samples against the static
// world and the rigid shapes; FEM surface vertices against the surface triangles of the other
// FEM bodies and, non-adjacent, of their own), turn every contact point that is not a node into a virtual node
// (eq. 14-15, gain kv), assemble the global A v-hat = b + Jc^T lambda, solve it with COND and
// advance every part (x += t v-hat, v = 2 v-hat - v) with inelastic contacts.
// Contact rule (docs/collision.md): a contact exists when the gap is below the margin
// |v| t + contact_margin; phi_n = gap / t; friction of a rigid body against the static world is
// sqrt(mu_shape,k mu_body) per tangent axis k (an anisotropic shape keeps its axes), of an FEM
// body the shape's; rigid-rigid sqrt(mu_i mu_j), FEM-rigid the rigid body's, FEM-FEM
// sqrt(mu_i mu_j) (self-contact: the body's mu). SI units.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "condsim/backend.h"
#include "models/collision/detector.h"
#include "models/collision/static_world.h"
#include "models/cond/cond_solver.h"
#include "models/fem/fem_model.h"
#include "models/fem/mesh_io.h"
#include "models/rigid/rigid_model.h"
#include "models/rod/rod_model.h"
#include "models/system/system_matrix.h"

namespace condsim {

struct WorldParams {
  Scalar dt = 0.01;                     // time step t [s]
  Vec3 gravity{0, 0, -9.81};            // [m/s^2]
  Scalar kv = 1e5;                      // virtual-node gain (eq. 14) [N s/m]; Table I uses 1e5
  Scalar contact_margin = 1e-3;         // detection distance beyond |v| t [m]
  bool inelastic = true;                // restitution 0 at pressed contacts
  bool warm_start = true;               // start each solve from the previous step's v-hat (Sec. V-A5)
  CondParams cond;                      // the solver
  // throws condsim::Error naming the field
  void Validate() const;
};

// what the world reports for one contact (force sensors, tactile data)
struct ContactRecord {
  Vec3 position;     // contact point on body i's side [m]
  Vec3 normal;       // unit normal, pointing into body i
  Vec3 lambda;       // (normal, t1, t2) force in the contact frame [N] (mean over the step)
  Vec3 force;        // the same in the world frame, acting on body i (body j gets -force) [N]
  Index body_i = -1;  // body ids (World::AddRigid / AddFem order); -1: the static world
  Index body_j = -1;
  Index shape = -1;   // the static shape when body_j = -1 (AddStatic's id)
  Index mesh = -1;    // the static triangle mesh when body_j = -1 (AddStaticMesh's id)
};

// total contact force and torque on a body [N], [N m] (torque about the rigid body's centre of
// mass; about the origin for FEM bodies)
struct Wrench {
  Vec3 force;
  Vec3 torque;
};

struct StepStats {
  CondStats cond;
  Index contacts = 0;
  Index virtual_nodes = 0;
  Scalar max_penetration = 0;  // deepest detected penetration at the step's start [m] (-gap)
  double detect_seconds = 0;   // detection and nodalization
  double step_seconds = 0;     // the whole step
};

class World {
 public:
  World(Backend* backend, const WorldParams& params);
  ~World();

  // scene building (before the first Step); returns the shape / body id
  Index AddStatic(const StaticShape& shape);
  // a static triangle mesh (world coordinates, outward counter-clockwise triangles) with friction
  // mu; returns its mesh id. Nodes, cable centres and rigid samples touch its triangles
  // (docs/collision.md, "Detection on the backend"); keep its triangles near the size of the
  // bodies' features (the grid cell follows the largest triangles).
  Index AddStaticMesh(const SurfaceMesh& mesh, Scalar mu = 0.5, const std::string& name = "static mesh");
  Index AddRigid(const RigidBody& body);
  // an FEM body with friction mu against other FEM bodies (and itself when self_contact)
  Index AddFem(const TetMesh& mesh, const FemMaterial& material, const std::string& name = "fem body",
               Scalar mu = 0.5, bool self_contact = true);
  // an FEM body's model: boundary conditions (prescribed nodes, attachments) between steps
  FemModel& fem_model(Index body);
  // a Cosserat-rod cable (models/rod/rod_model.h) with friction mu against other cables (and
  // itself when self_contact); its segment centres touch the static world, its links (centre to
  // centre) touch the links of other cables and its own non-neighbouring links
  Index AddRod(const RodGeometry& geometry, const RodMaterial& material, const RodEnd& start = {}, const RodEnd& finish = {},
               const std::string& name = "rod", Scalar mu = 0.5, bool self_contact = true);
  // a cable's model: end poses between steps
  RodModel& rod_model(Index body);
  // segment centres of a cable (3 per segment) [m]
  std::vector<Scalar> RodPositions(Index body) const;

  // a joint between two rigid bodies, or a rigid body and the world (body_j = -1), given at the
  // bodies' poses when added (models/rigid/joint.h; body ids as returned by AddRigid); contacts
  // between two jointed bodies are not detected. Returns the joint id.
  Index AddJoint(const Joint& joint);
  // a PD drive on a prismatic / revolute joint (set it again whenever the target changes)
  void SetJointDrive(Index joint, const JointDrive& drive);
  // the joint coordinate: slide [m] or unwrapped angle [rad]; its rate; the constraint error
  Scalar JointPosition(Index joint) const;
  Scalar JointRate(Index joint) const;
  JointError JointConstraintError(Index joint) const;
  // external wrench (force, torque: 6 values) on a rigid body for the coming steps
  void SetRigidWrench(Index body, const Vec3& force, const Vec3& torque);
  // a pose drive on a rigid body (models/rigid/rigid_model.h); set its target every step
  void SetPoseDrive(Index body, const PoseDrive& drive);
  StepStats Step();

  Scalar time() const { return time_; }
  // velocity DOFs of the bodies (3 per FEM node, 6 per cable segment and per rigid body)
  Index num_dofs() const;
  Index num_bodies() const { return static_cast<Index>(bodies_.size()); }
  Index step_count() const { return steps_; }
  const WorldParams& params() const { return params_; }
  const RigidModel& rigid() const { return rigid_; }
  const RigidBody& rigid_body(Index body) const;
  // FEM node positions / velocities (3 per node) of a body
  std::vector<Scalar> FemPositions(Index body) const;
  std::vector<Scalar> FemVelocities(Index body) const;
  void SetFemVelocities(Index body, const std::vector<Scalar>& v);
  const std::vector<ContactRecord>& contacts() const { return records_; }
  // the sum of the contact forces on a body (the static world: body = -1)
  Wrench BodyWrench(Index body) const;
  // tests: rotates every contact's tangent basis about its normal by `angle` [rad]
  void set_tangent_rotation(Scalar angle) { tangent_rotation_ = angle; }

 private:
  struct FemBody;
  struct RodBody;
  // throws unless body is a body of this kind (0 rigid, 1 FEM, 2 rod)
  void CheckBody(Index body, int kind) const;
  // the body id of the k-th body of a kind, or -1
  Index BodyId(int kind, Index k) const;
  // S-contacts of a deformable node (radius r) with every static shape (friction: the shape's)
  void NodeStaticContacts(Index node, const Vec3& p, const Vec3& vp, Scalar radius, Index body, ContactSet* contacts);
  // a virtual node at point p of rigid body k (J = [I, -[r]x], gain kv); returns its global node
  Index RigidPointNode(Index k, const Vec3& p, VirtualNodeSet* vn) const;
  // D-contacts of a deformable node (radius r) with the rigid bodies' analytic shapes (mesh
  // bodies go through the detector); friction mu, or the rigid body's when mu < 0
  void NodeRigidContacts(Index node, const Vec3& p, const Vec3& vp, Scalar radius, Index body, Scalar mu, ContactSet* contacts,
                         VirtualNodeSet* vn);
  void Finalize();
  void Detect(ContactSet* contacts, VirtualNodeSet* vn);
  // FEM bodies, in patches, for the solver's exact mode correction (CondSolver::SetBodyModes)
  BodyModes FemBodyModes();
  // the backend detector (points vs triangles): its scene at Finalize, its contacts each step
  void BuildDetector();
  // rx, rv: the rigid samples' world positions and velocities (3 per sample, bodies in order)
  void DetectTriangles(const std::vector<std::vector<Scalar>>& fem_x, const std::vector<Scalar>& rx,
                       const std::vector<Scalar>& rv, ContactSet* contacts, VirtualNodeSet* vn);
  // cable links against cable links (a == b: self-contact)
  void DetectRodRod(std::size_t a, std::size_t b, const std::vector<std::vector<Scalar>>& x,
                    const std::vector<std::vector<Scalar>>& v, ContactSet* contacts, VirtualNodeSet* vn);
  // deformable part d: FEM bodies first, then cables; its part, node count and the mass of a
  // node that can touch (0 for a cable's rotation nodes)
  std::size_t num_deformable() const { return fem_.size() + rods_.size(); }
  Index DeformablePart(std::size_t d) const;
  Index DeformableNodes(std::size_t d) const;
  Scalar DeformableMass(std::size_t d, Index local) const;
  Array<Scalar>& DeformableVelocity(std::size_t d);
  // a barycentric virtual node on hosts h[0..n) with weights w; returns its global node
  Index AddBarycentricNode(Index n, const Index* hosts, const Scalar* w, VirtualNodeSet* vn);
  void ApplyInelastic(const ContactSet& contacts, const std::vector<Scalar>& lambda, const std::vector<Scalar>& vhat,
                      std::vector<Scalar>* rigid_v_next, std::vector<std::vector<Scalar>>* deformable_v_next);

  Backend* backend_;
  WorldParams params_;
  std::vector<StaticShape> statics_;
  struct StaticMesh {
    std::string name;
    std::vector<Scalar> x;
    std::vector<Index> tri;
    Scalar mu = 0.5, depth_limit = 0;
  };
  std::vector<StaticMesh> meshes_;
  // the detector's vertices: FEM surfaces, cable centres, rigid samples, mesh vertices; per query
  // its kind (0 rigid, 1 FEM, 2 cable), index in its kind and local node / segment / sample
  std::unique_ptr<Detector> detector_;
  std::vector<Index> q_kind_, q_body_, q_local_;
  std::vector<Index> t_owner_kind_, t_body_, t_nodes_;  // per triangle: 0 rigid / 1 FEM / 3 static mesh, its index,
                                                        // 3 local vertices
  std::vector<Array<Index>> gather_x_, gather_v_;       // per FEM body, then per cable
  std::vector<Index> gather_offset_;
  Index rigid_vertex_offset_ = 0;
  std::vector<Index> rigid_sample_first_;  // per rigid body: its first sample among the rigid samples
  std::vector<std::vector<SurfacePoint>> rigid_samples_;  // per rigid body: ContactSamples (body frame)
  std::vector<RigidBody> rigid_init_;
  std::vector<Joint> joints_;               // rigid-body indices (not body ids)
  std::vector<std::pair<Index, Index>> jointed_;  // rigid pairs (i < j) sharing a joint, sorted
  bool Jointed(Index a, Index b) const;
  void CheckJoint(Index joint) const;
  RigidModel rigid_;
  std::vector<std::unique_ptr<FemBody>> fem_;
  std::vector<std::unique_ptr<RodBody>> rods_;
  std::vector<std::pair<int, Index>> bodies_;  // (0 rigid | 1 fem | 2 rod, index in its kind)
  std::vector<Scalar> rigid_wrench_;
  bool finalized_ = false;
  std::unique_ptr<SystemMatrix> system_;
  std::unique_ptr<CondSolver> solver_;
  std::unique_ptr<DeviceBlockMatrix> rigid_a_;
  Array<Scalar> rigid_b_, rigid_v_, v_;
  std::vector<Scalar> rigid_vhat_prev_;  // the last step's v-hat of the rigid bodies (warm start)
  Index rigid_part_ = -1;
  // per contact: owner info for the records, the virtual node's rigid body (or -1) per side
  struct ContactMeta {
    Vec3 position;
    Index body_i, body_j, shape;
    Index rigid_i, rigid_j;  // rigid body of a virtual-node side, else -1
    Vec3 arm_i, arm_j;       // contact point - centre of mass on those sides
    Index mesh = -1;
  };
  BarycentricNodes bary_;    // this step's virtual nodes on FEM triangles
  std::vector<std::vector<Scalar>> fem_x_host_;  // this step's FEM node positions (host copy)
  std::vector<ContactMeta> meta_;
  std::vector<ContactRecord> records_;
  Scalar tangent_rotation_ = 0;
  Scalar time_ = 0;
  Index steps_ = 0;
};

}  // namespace condsim
