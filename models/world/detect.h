// The detection stage: every contact of a step, nodalized. Rigid surface samples against the
// static shapes and the other rigid bodies' analytic shapes (host: rigid state is host state),
// FEM surface nodes and cable centres against the static shapes and the rigid bodies' analytic
// shapes (flagged on the backend; only the flagged points come to the host, which makes their
// contacts), points against triangles (backend, detect_triangles.h), cable links against cable
// links (backend, link_detector.h; the host makes the contacts of the pairs found). Contacts follow the
// contact rule (contact_rule.h); points that are not nodes become virtual nodes (nodalize.h).
#pragma once

#include <memory>
#include <vector>

#include "condsim/contacts.h"
#include "models/collision/link_detector.h"
#include "models/world/bodies.h"
#include "models/world/contact_rule.h"
#include "models/world/detect_triangles.h"
#include "models/world/nodalize.h"

namespace condsim {

class DetectStage : public ContactRecordWriter {
 public:
  // the backend detector's scene and the environments' shapes and bodies (once, at the first step)
  void Build(WorldBodies* w);
  // this step's contacts and virtual nodes (nodes is reset first)
  void Run(const WorldBodies& w, Nodalizer* nodes, ContactSet* contacts);
  // what a step's contacts can need at most, known at the first step, when each point that can
  // touch something (FEM surface nodes, cable centres and links, rigid surface samples) makes at
  // most `per_point` contacts a step, each with the virtual nodes its kind of point can make
  ContactBounds PotentialContacts(const WorldBodies& w, Index per_point) const;
  const std::vector<ContactMeta>& meta() const { return meta_; }
  // whether the solver takes the last Run's record from Write: its plan uploads 24 B per contact
  // outside the runs (the S-contacts of consecutive flagged points against static shapes, made on
  // the backend from the points' reach bits) and 96 B more per contact the backend does not remake
  // (it remakes the S-contacts of flagged FEM surface nodes and cable centres against static
  // shapes), used when that is less than the set's 108 B per contact
  bool remakes() const;
  // how many of the last Run's contacts the backend remakes
  Index remade_contacts() const;
  // the last Run's contacts (exactly) on the backend (ContactRecordWriter)
  void Write(const ContactSet& contacts, const ContactOutView& out) override;
  // whether contact m of the last Run has its frame, phi and contact point on the backend only:
  // the S-contacts of flagged points against static shapes, when no flagged point needed its
  // position on the host (no analytic rigid body in reach); the host's set holds NaN there
  bool Deferred(Index m) const override;
  // fills those fields in the set the last Run filled and in meta() (one read: the flagged
  // points' positions, 24 B each; then the host's arithmetic, so the same numbers as the backend's)
  void Complete() override;
  // contact m's penetration -phi t [m] (the step's statistic), the backend's for a deferred one
  // (with one environment the deepest of the step's deferred contacts, or 0, for each of them:
  // only their maximum is a statistic)
  Scalar Penetration(const ContactSet& contacts, Index m) const;
  // capacity for the plans of up to `contacts` contacts
  void Reserve(Index contacts);
  // tests: rotates every contact's tangent basis about its normal by `angle` [rad]
  void set_tangent_rotation(Scalar angle) { tangent_rotation_ = angle; }

 private:
  // the flagged FEM surface nodes and cable centres (Detector::ShapeCandidates), with their
  // positions only when the host needs them
  const NodeCandidates& FlaggedPoints(const WorldBodies& w);
  // the static shapes of query point q's environment: its first reach bits
  std::size_t StaticShapes(const WorldBodies& w, Index q) const;
  // the runs of the last Run's contacts (runs_, in_run_) and the query points' nodes
  void MakeRuns(const WorldBodies& w, const NodeCandidates& cand, const ContactSet& contacts);
  void RigidContacts(const WorldBodies& w, const std::vector<Scalar>& rx, const std::vector<Scalar>& rv, Nodalizer* nodes,
                     ContactWriter* out);
  // flagged point c of `cand`, a deformable node (radius r) of body `side`, against the static
  // shapes and the rigid bodies' analytic shapes (mesh bodies go through the detector); the
  // backend remakes its S-contacts
  void NodeContacts(const WorldBodies& w, const NodeCandidates& cand, Index c, Index node, Scalar radius, const ContactSide& side,
                    Nodalizer* nodes, ContactWriter* out);
  // cable links against cable links (a == b: self-contact), found on the backend
  struct CablePair {
    std::size_t a, b;
    std::vector<Index> links_a, links_b;  // the links (first centres) of each cable
    std::unique_ptr<LinkDetector> detector;
  };
  void CableLinks(const WorldBodies& w, CablePair* pair, Nodalizer* nodes, ContactWriter* out);

  TriangleDetection triangles_;
  std::vector<ContactMeta> meta_;
  std::vector<std::vector<Index>> env_statics_, env_rigid_;  // per environment: static shapes, rigid bodies
  std::vector<CablePair> cable_pairs_;  // the cable pairs of one environment (self: a == b), a then b ascending
  Scalar tangent_rotation_ = 0;
  Scalar dt_ = 0;      // the last Run's step [s]
  ContactSources sources_;  // the last Run's contacts: per contact its source (ContactWriter)
  // the runs of the last Run's S-contacts the backend makes from the flagged points alone (the
  // plan's rows of the others are explicit), and per contact whether a run holds it
  std::vector<ContactRun> runs_;
  std::vector<unsigned char> in_run_;
  std::vector<Index> query_node_;  // per query point of a flagged point its node (Detector::SetQueryNodes)
  ContactPlan plan_;               // the upload of the last Write
  // the last Run's deferred contacts (AddDeferred) until Complete: the contact, its flagged point,
  // static shape and query radius; and per contact its flagged point when deferred, else -1
  struct DeferredContact {
    Index m, point, shape;
    Scalar radius;
  };
  std::vector<DeferredContact> deferred_;
  std::vector<Index> deferred_point_;
  ContactSet* target_ = nullptr;                        // the set the last Run filled
  Scalar max_penetration_ = -1;  // the flagged points' deepest penetration (or 0) when read alone, else -1
  const std::vector<StaticShape>* statics_ = nullptr;  // WorldBodies::statics
};

}  // namespace condsim
