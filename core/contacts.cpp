// Contact set validation and coloring.
#include "condsim/contacts.h"

#include <algorithm>
#include <cmath>

#include "condsim/error.h"

namespace condsim {

void ContactSet::Add(Index i, Index j, const Mat3& r, Scalar phi_n, Scalar mu_1, Scalar mu_2,
                     Index env_id) {
  node_i.push_back(i);
  node_j.push_back(j);
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b) frame.push_back(r(a, b));
  phi.push_back(phi_n);
  mu1.push_back(mu_1);
  mu2.push_back(mu_2);
  env.push_back(env_id);
}

Mat3 ContactSet::Frame(Index m) const {
  const Scalar* f = frame.data() + std::size_t(m) * 9;
  return Mat3(f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8]);
}

void ContactSet::Validate(const std::vector<Index>& node_env, bool isotropic_only, const std::vector<unsigned char>* backend_only) const {
  const std::size_t n = node_i.size();
  CONDSIM_CHECK(node_j.size() == n && phi.size() == n && mu1.size() == n && mu2.size() == n &&
                    env.size() == n && frame.size() == 9 * n,
                "contacts: arrays have inconsistent lengths (" << n << " contacts)");
  const Index num_nodes = static_cast<Index>(node_env.size());
  for (std::size_t m = 0; m < n; ++m) {
    const Index i = node_i[m], j = node_j[m];
    CONDSIM_CHECK(i >= 0 && i < num_nodes, "contact " << m << ": node_i = " << i << " is not a node (0.." << num_nodes - 1 << ")");
    CONDSIM_CHECK(j >= -1 && j < num_nodes && j != i,
                  "contact " << m << ": node_j = " << j << " must be -1 (S-contact) or another node");
    CONDSIM_CHECK(node_env[i] == env[m] && (j < 0 || node_env[j] == env[m]),
                  "contact " << m << ": env = " << env[m] << " but its nodes belong to environment "
                             << node_env[i] << (j >= 0 ? " and " + std::to_string(node_env[j]) : std::string()));
    const bool host_fields = backend_only == nullptr || m >= backend_only->size() || (*backend_only)[m] == 0;
    CONDSIM_CHECK(!host_fields || std::isfinite(phi[m]), "contact " << m << ": phi is not finite");
    CONDSIM_CHECK(std::isfinite(mu1[m]) && std::isfinite(mu2[m]) && mu1[m] >= 0 && mu2[m] >= 0,
                  "contact " << m << ": friction (mu1, mu2) = (" << mu1[m] << ", " << mu2[m] << ") must be finite and >= 0");
    CONDSIM_CHECK(!isotropic_only || mu1[m] == mu2[m],
                  "contact " << m << ": anisotropic friction (mu1 != mu2) needs the strict projection");
    if (!host_fields) continue;
    const Mat3 r = Frame(Index(m));
    const Scalar err = FrobeniusNorm(r * Transpose(r) - Mat3::Identity());
    CONDSIM_CHECK(err <= 1e-9 && Determinant(r) > 0,
                  "contact " << m << ": frame is not a rotation (|R R^T - I| = " << err << ", det = " << Determinant(r) << ")");
  }
}

void CheckContactNormal(const Vec3& normal) {
  // a zero or non-finite normal means degenerate geometry upstream: never a silent bad frame
  CONDSIM_CHECK(std::isfinite(normal[0]) && std::isfinite(normal[1]) && std::isfinite(normal[2]) && Norm(normal) > 0,
                "contact normal (" << normal[0] << ", " << normal[1] << ", " << normal[2]
                                   << ") is zero or not finite (degenerate contact geometry)");
}

Mat3 ContactFrame(const Vec3& normal) {
  CheckContactNormal(normal);
  return UncheckedContactFrame(normal);
}

ContactColoring ColorContacts(const ContactSet& contacts, Index num_nodes) {
  // colors already used at each node, as a small sorted list
  std::vector<std::vector<Index>> used(static_cast<std::size_t>(num_nodes));
  std::vector<Index> color(contacts.node_i.size());
  Index num_colors = 0;
  for (std::size_t m = 0; m < contacts.node_i.size(); ++m) {
    const Index i = contacts.node_i[m], j = contacts.node_j[m];
    Index c = 0;
    auto taken = [&](Index k) {
      return std::binary_search(used[i].begin(), used[i].end(), k) ||
             (j >= 0 && std::binary_search(used[j].begin(), used[j].end(), k));
    };
    while (taken(c)) ++c;
    color[m] = c;
    num_colors = std::max(num_colors, c + 1);
    used[i].insert(std::upper_bound(used[i].begin(), used[i].end(), c), c);
    if (j >= 0) used[j].insert(std::upper_bound(used[j].begin(), used[j].end(), c), c);
  }
  ContactColoring out;
  out.color_ptr.assign(std::size_t(num_colors) + 1, 0);
  for (Index c : color) ++out.color_ptr[std::size_t(c) + 1];
  for (Index c = 0; c < num_colors; ++c) out.color_ptr[c + 1] += out.color_ptr[c];
  out.order.resize(color.size());
  std::vector<Index> fill(out.color_ptr.begin(), out.color_ptr.end() - 1);
  for (std::size_t m = 0; m < color.size(); ++m) out.order[fill[color[m]]++] = static_cast<Index>(m);
  return out;
}

}  // namespace condsim
