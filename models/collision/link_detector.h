// Cable links against cable links on the backend: a uniform grid over one cable's link boxes
// (grown by what two links can close within the step), queried by the other cable's link
// midpoints, and the segment-segment narrow phase (link_ops.h LinkNarrow). Only the pairs in
// contact come to the host (80 B each), in the order of the host's former broad phase
// (per link of cable a ascending, its candidates ascending: broad_phase.h AabbGrid::Query).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "condsim/backend.h"
#include "condsim/math.h"
#include "models/collision/link_ops.h"

namespace condsim {

class DetectKernels;

// the link pairs in contact of one Detect(), on the host
struct LinkHits {
  std::vector<Index> a, b;   // per pair: the link's index in links_a / links_b
  std::vector<Scalar> data;  // 9 per pair (LinkContact): s, t, gap [m], n (3, from b to a), pp (3, on a's axis) [m]
  Index size() const { return static_cast<Index>(a.size()); }
};

// one pair of cables of one environment (a == b: self-contact); a link k joins centres links[k]
// and links[k] + 1
class LinkDetector {
 public:
  LinkDetector(Backend* backend, const std::vector<Index>& links_a, const std::vector<Index>& links_b, Index centres_a, Index centres_b,
               bool self);
  ~LinkDetector();
  // x: the cables' centres (3 each), v: their nodes' velocities (3 each, centre s at node 2s);
  // ra, rb: the radii; reach_extra: added to the boxes' growth (half a's segment length); skip:
  // in self-contact, links u < s + skip are link s's neighbours, never a contact
  const LinkHits& Detect(const Array<Scalar>& xa, const Array<Scalar>& va, const Array<Scalar>& xb, const Array<Scalar>& vb, Scalar ra,
                         Scalar rb, Scalar reach_extra, Index skip, Scalar dt, Scalar margin);

 private:
  Backend* backend_;
  std::unique_ptr<DetectKernels> kernels_;
  Index num_a_, num_b_, centres_a_, centres_b_;
  bool self_;
  Array<Index> links_a_, links_b_, zeros_, count_, offset_, items_, hit_a_, hit_b_;
  Array<Scalar> speed_a_, speed_b_, lo_, hi_, ext_, hit_data_;
  Array<std::uint64_t> keys_;
  LinkHits hits_;
};

}  // namespace condsim
