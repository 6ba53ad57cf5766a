// Virtual node sets.
#include "models/system/virtual_nodes.h"

#include <cmath>

#include "condsim/error.h"

namespace condsim {

Index VirtualNodeSet::Add(Index n, const Index* h, const Mat3* j, Scalar gain, Index env_id) {
  CONDSIM_CHECK(n >= 1, "virtual node: needs at least one host node");
  CONDSIM_CHECK(std::isfinite(gain) && gain > 0, "virtual node: gain kv must be > 0 [N s/m], got " << gain);
  for (Index a = 0; a < n; ++a) {
    host.push_back(h[a]);
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) jac.push_back(j[a](r, c));
  }
  ptr.push_back(static_cast<Index>(host.size()));
  kv.push_back(gain);
  env.push_back(env_id);
  return size() - 1;
}

Index VirtualNodeSet::AddRigidPoint(Index trans, Index rot, const Vec3& r, Scalar gain, Index env_id) {
  const Index h[2] = {trans, rot};
  const Mat3 j[2] = {Mat3::Identity(), Scalar(-1) * Skew(r)};
  return Add(2, h, j, gain, env_id);
}

Index VirtualNodeSet::AddBarycentric(Index n, const Index* nodes, const Scalar* w, Scalar gain, Index env_id) {
  std::vector<Mat3> j(static_cast<std::size_t>(n));
  for (Index a = 0; a < n; ++a) j[a] = w[a] * Mat3::Identity();
  return Add(n, nodes, j.data(), gain, env_id);
}

}  // namespace condsim
