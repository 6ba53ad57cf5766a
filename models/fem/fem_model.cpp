// Co-rotational linear FEM: rest precomputation and assembly on a backend.
#include "models/fem/fem_model.h"

#include <cmath>

#include "condsim/error.h"
#include "models/fem/fem_kernels.h"

namespace condsim {

void FemMaterial::Validate(const std::string& where) const {
  CONDSIM_CHECK(std::isfinite(young) && young > 0, where << ": material.young must be > 0 [Pa], got " << young);
  CONDSIM_CHECK(std::isfinite(poisson) && poisson > -1 && poisson < 0.5,
                where << ": material.poisson must be in (-1, 0.5), got " << poisson);
  CONDSIM_CHECK(std::isfinite(density) && density > 0, where << ": material.density must be > 0 [kg/m^3], got " << density);
  CONDSIM_CHECK(std::isfinite(rayleigh_alpha) && rayleigh_alpha >= 0,
                where << ": material.rayleigh_alpha must be >= 0 [1/s], got " << rayleigh_alpha);
  CONDSIM_CHECK(std::isfinite(rayleigh_beta) && rayleigh_beta >= 0,
                where << ": material.rayleigh_beta must be >= 0 [s], got " << rayleigh_beta);
}

FemModel::FemModel(Backend* backend, const TetMesh& mesh, const FemMaterial& material,
                   const std::string& source, const std::vector<FemLink>& links)
    : backend_(backend), material_(material), kernels_(MakeKernels<FemKernels>(*backend)) {
  material.Validate(source);
  warnings_ = ValidateMesh(mesh, source);
  num_nodes_ = mesh.num_nodes();
  num_tets_ = mesh.num_tets();
  CheckedIndex(std::size_t(num_tets_) * 16, "fem: element-block references");
  // rest data: Bm = Dm^-1, volume, lumped mass (element order: deterministic)
  std::vector<Scalar> bm(std::size_t(num_tets_) * 9), vol(static_cast<std::size_t>(num_tets_));
  mass_host_.assign(static_cast<std::size_t>(num_nodes_), 0);
  for (Index e = 0; e < num_tets_; ++e) {
    const Index* t = mesh.tets.data() + 4 * std::size_t(e);
    const Vec3 x0 = mesh.Node(t[0]);
    const Mat3 dm = Mat3::FromColumns(mesh.Node(t[1]) - x0, mesh.Node(t[2]) - x0, mesh.Node(t[3]) - x0);
    const Mat3 inv = Inverse(dm);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) bm[9 * std::size_t(e) + 3 * i + j] = inv(i, j);
    vol[e] = Determinant(dm) / 6;
    for (int a = 0; a < 4; ++a) mass_host_[t[a]] += Scalar(material.density) * vol[e] / 4;
  }
  // pattern: node pairs sharing an element
  std::vector<std::pair<Index, Index>> coords;
  coords.reserve(std::size_t(num_tets_) * 16);
  for (Index e = 0; e < num_tets_; ++e)
    for (int a = 0; a < 4; ++a)
      for (int c = 0; c < 4; ++c) coords.push_back({mesh.tets[4 * std::size_t(e) + a], mesh.tets[4 * std::size_t(e) + c]});
  for (std::size_t l = 0; l < links.size(); ++l) {
    const FemLink& k = links[l];
    CONDSIM_CHECK(k.i >= 0 && k.i < num_nodes_ && k.j >= 0 && k.j < num_nodes_ && k.i != k.j,
                  source << ": link " << l << " must join two different nodes of the mesh, got " << k.i << " and " << k.j);
    CONDSIM_CHECK(std::isfinite(k.stiffness) && k.stiffness > 0, source << ": link " << l << " needs a stiffness > 0 [N/m]");
    coords.push_back({k.i, k.j});
    coords.push_back({k.j, k.i});
  }
  pattern_ = BlockPattern::FromCoordinates(3, num_nodes_, num_nodes_, std::move(coords));
  // gather lists in element order: node -> (element, local), block -> (element, a, b)
  std::vector<Index> node_ptr(std::size_t(num_nodes_) + 1, 0), block_ptr(std::size_t(pattern_.nnz_blocks()) + 1, 0);
  for (Index e = 0; e < num_tets_; ++e)
    for (int a = 0; a < 4; ++a) {
      const Index na = mesh.tets[4 * std::size_t(e) + a];
      ++node_ptr[std::size_t(na) + 1];
      for (int c = 0; c < 4; ++c) ++block_ptr[std::size_t(pattern_.Find(na, mesh.tets[4 * std::size_t(e) + c])) + 1];
    }
  for (std::size_t i = 1; i < node_ptr.size(); ++i) node_ptr[i] += node_ptr[i - 1];
  for (std::size_t i = 1; i < block_ptr.size(); ++i) block_ptr[i] += block_ptr[i - 1];
  std::vector<Index> node_refs(static_cast<std::size_t>(node_ptr.back())), block_refs(static_cast<std::size_t>(block_ptr.back()));
  std::vector<Index> node_fill(node_ptr.begin(), node_ptr.end() - 1), block_fill(block_ptr.begin(), block_ptr.end() - 1);
  for (Index e = 0; e < num_tets_; ++e)
    for (int a = 0; a < 4; ++a) {
      const Index na = mesh.tets[4 * std::size_t(e) + a];
      node_refs[node_fill[na]++] = 4 * e + a;
      for (int c = 0; c < 4; ++c) {
        const Index k = pattern_.Find(na, mesh.tets[4 * std::size_t(e) + c]);
        block_refs[block_fill[k]++] = 16 * e + 4 * a + c;
      }
    }
  std::vector<Index> block_row(static_cast<std::size_t>(pattern_.nnz_blocks()));
  for (Index r = 0; r < pattern_.block_rows; ++r)
    for (Index k = pattern_.row_ptr[r]; k < pattern_.row_ptr[r + 1]; ++k) block_row[k] = r;
  Backend* b = backend_;
  tets_ = Array<Index>(b, mesh.tets);
  node_ptr_ = Array<Index>(b, node_ptr);
  node_refs_ = Array<Index>(b, node_refs);
  block_ptr_ = Array<Index>(b, block_ptr);
  block_refs_ = Array<Index>(b, block_refs);
  block_row_ = Array<Index>(b, block_row);
  bm_ = Array<Scalar>(b, bm);
  volume_ = Array<Scalar>(b, vol);
  mu_ = Array<Scalar>(b, std::vector<Scalar>(vol.size(), Scalar(material.Mu())));
  lambda_ = Array<Scalar>(b, std::vector<Scalar>(vol.size(), Scalar(material.Lambda())));
  mass_ = Array<Scalar>(b, mass_host_);
  rotation_ = Array<Scalar>(b, num_tets_ * 9);
  force_ = Array<Scalar>(b, num_tets_ * 12);
  energy_ = Array<Scalar>(b, num_tets_);
  ones_ = Array<Scalar>(b, std::vector<Scalar>(vol.size(), Scalar(1)));
  zero_v_ = Array<Scalar>(b, std::vector<Scalar>(std::size_t(num_nodes_) * 3, Scalar(0)));
  x_mid_ = Array<Scalar>(b, num_nodes_ * 3);
  if (material.geometric_stiffness) geo_diag_ = Array<Scalar>(b, num_tets_ * 12);
  r_ = Array<Scalar>(b, num_nodes_ * 3);
  SetPrescribedNodes({});
  // link gathers: per block (link, sign) and per node (link, side), in link order
  num_links_ = static_cast<Index>(links.size());
  if (num_links_ > 0) {
    std::vector<Index> li, lj, bptr(std::size_t(pattern_.nnz_blocks()) + 1, 0), nptr(std::size_t(num_nodes_) + 1, 0);
    std::vector<Scalar> lk;
    for (const FemLink& k : links) {
      li.push_back(k.i);
      lj.push_back(k.j);
      lk.push_back(k.stiffness);
      for (const auto& [r, c] : {std::pair{k.i, k.i}, std::pair{k.j, k.j}, std::pair{k.i, k.j}, std::pair{k.j, k.i}})
        ++bptr[std::size_t(pattern_.Find(r, c)) + 1];
      ++nptr[std::size_t(k.i) + 1];
      ++nptr[std::size_t(k.j) + 1];
    }
    for (std::size_t q = 1; q < bptr.size(); ++q) bptr[q] += bptr[q - 1];
    for (std::size_t q = 1; q < nptr.size(); ++q) nptr[q] += nptr[q - 1];
    std::vector<Index> brefs(static_cast<std::size_t>(bptr.back())), nrefs(static_cast<std::size_t>(nptr.back()));
    std::vector<Index> bfill(bptr.begin(), bptr.end() - 1), nfill(nptr.begin(), nptr.end() - 1);
    for (Index l = 0; l < num_links_; ++l) {
      const Index i = li[l], j = lj[l];
      brefs[bfill[pattern_.Find(i, i)]++] = 2 * l;
      brefs[bfill[pattern_.Find(j, j)]++] = 2 * l;
      brefs[bfill[pattern_.Find(i, j)]++] = 2 * l + 1;
      brefs[bfill[pattern_.Find(j, i)]++] = 2 * l + 1;
      nrefs[nfill[i]++] = 2 * l;
      nrefs[nfill[j]++] = 2 * l + 1;
    }
    link_i_ = Array<Index>(b, li);
    link_j_ = Array<Index>(b, lj);
    link_k_ = Array<Scalar>(b, lk);
    link_block_ptr_ = Array<Index>(b, bptr);
    link_block_refs_ = Array<Index>(b, brefs);
    link_node_ptr_ = Array<Index>(b, nptr);
    link_node_refs_ = Array<Index>(b, nrefs);
  }
}

void FemModel::SetPrescribedNodes(const std::vector<Index>& nodes) {
  std::vector<unsigned char> flag(static_cast<std::size_t>(num_nodes_), 0);
  for (Index i : nodes) {
    CONDSIM_CHECK(i >= 0 && i < num_nodes_, "fem: prescribed node " << i << " is not a node (0.." << num_nodes_ - 1 << ")");
    CONDSIM_CHECK(!flag[i], "fem: node " << i << " is prescribed twice");
    flag[i] = 1;
  }
  prescribed_nodes_ = nodes;
  // a new node set needs its reference positions again (CarryPrescribed)
  prescribed_index_ = Array<Index>();
  prescribed_reference_ = Array<Scalar>();
  prescribed_ = Array<unsigned char>(backend_, flag);
  v_prescribed_ = Array<Scalar>(backend_, std::vector<Scalar>(std::size_t(num_nodes_) * 3, Scalar(0)));
}

void FemModel::SetPrescribedVelocities(const std::vector<Scalar>& v) {
  CONDSIM_CHECK(v.size() == 3 * prescribed_nodes_.size(),
                "fem: " << v.size() << " prescribed velocity values for " << prescribed_nodes_.size() << " nodes (3 each)");
  std::vector<Scalar> all(std::size_t(num_nodes_) * 3, Scalar(0));
  for (std::size_t q = 0; q < prescribed_nodes_.size(); ++q)
    for (int c = 0; c < 3; ++c) {
      CONDSIM_CHECK(std::isfinite(v[3 * q + c]), "fem: prescribed velocity of node " << prescribed_nodes_[q] << " is not finite");
      all[3 * std::size_t(prescribed_nodes_[q]) + c] = v[3 * q + c];
    }
  v_prescribed_.CopyFromHost(all);
}

void FemModel::SetPrescribedReference(const std::vector<Scalar>& reference) {
  CONDSIM_CHECK(reference.size() == 3 * prescribed_nodes_.size(),
                "fem: " << reference.size() << " reference coordinates for " << prescribed_nodes_.size() << " prescribed nodes (3 each)");
  for (Scalar c : reference) CONDSIM_CHECK(std::isfinite(c), "fem: a prescribed node's reference position is not finite");
  prescribed_index_.Assign(backend_, prescribed_nodes_);
  prescribed_reference_.Assign(backend_, reference);
}

void FemModel::CarryPrescribed(const Array<Scalar>& x, const Mat3& r, const Vec3& p, const Vec3& origin, Scalar dt) {
  const Index n = static_cast<Index>(prescribed_nodes_.size());
  CONDSIM_CHECK(prescribed_reference_.size() == 3 * n && prescribed_index_.size() == n,
                "fem: CarryPrescribed needs SetPrescribedReference after SetPrescribedNodes");
  CONDSIM_CHECK(x.size() == 3 * num_nodes_, "fem: positions have " << x.size() << " entries, the mesh has " << num_nodes_ << " nodes");
  CONDSIM_CHECK(std::isfinite(dt) && dt > 0, "fem: CarryPrescribed needs a step > 0 [s], got " << dt);
  kernels_->Run(n, CarryPrescribedOp{prescribed_index_.data(), prescribed_reference_.data(), r, p, origin, Scalar(1) / dt, x.data(),
                                     v_prescribed_.data()});
}

void FemModel::SetAttachments(const std::vector<Index>& nodes, const std::vector<Scalar>& stiffness) {
  CONDSIM_CHECK(nodes.size() == stiffness.size(), "fem: " << nodes.size() << " attached nodes but " << stiffness.size() << " stiffnesses");
  std::vector<Index> block(nodes.size());
  for (std::size_t q = 0; q < nodes.size(); ++q) {
    CONDSIM_CHECK(nodes[q] >= 0 && nodes[q] < num_nodes_, "fem: attached node " << nodes[q] << " is not a node");
    CONDSIM_CHECK(std::isfinite(stiffness[q]) && stiffness[q] > 0, "fem: attachment " << q << " needs a stiffness > 0 [N/m]");
    for (std::size_t p = 0; p < q; ++p) CONDSIM_CHECK(nodes[p] != nodes[q], "fem: node " << nodes[q] << " is attached twice");
    block[q] = pattern_.Find(nodes[q], nodes[q]);
  }
  num_attached_ = static_cast<Index>(nodes.size());
  attach_nodes_ = Array<Index>(backend_, nodes);
  attach_block_ = Array<Index>(backend_, block);
  attach_k_ = Array<Scalar>(backend_, stiffness);
  attach_p_ = Array<Scalar>(backend_, num_attached_ * 3);
  attach_v_ = Array<Scalar>(backend_, std::vector<Scalar>(nodes.size() * 3, Scalar(0)));
  backend_->Fill(0, &attach_p_);
}

void FemModel::SetAttachmentTargets(const std::vector<Scalar>& p, const std::vector<Scalar>& v) {
  CONDSIM_CHECK(p.size() == 3 * std::size_t(num_attached_) && v.size() == p.size(),
                "fem: attachment targets need 3 positions and 3 velocities per attachment (" << num_attached_ << ")");
  for (std::size_t k = 0; k < p.size(); ++k) {
    CONDSIM_CHECK(std::isfinite(p[k]) && std::isfinite(v[k]), "fem: attachment target " << k / 3 << " is not finite");
  }
  attach_p_.CopyFromHost(p);
  attach_v_.CopyFromHost(v);
}

FemModel::~FemModel() = default;

void FemModel::ComputeElements(const Array<Scalar>& x, bool with_energy, bool with_geometric) {
  CONDSIM_CHECK(x.size() == 3 * num_nodes_, "fem: positions have " << x.size() << " entries, the mesh has "
                                                                    << num_nodes_ << " nodes");
  kernels_->Run(num_tets_, FemElementOp{tets_.data(), x.data(), bm_.data(), volume_.data(), mu_.data(),
                                             lambda_.data(), rotation_.data(), force_.data(),
                                             with_energy ? energy_.data() : nullptr});
  if (with_geometric) {
    kernels_->Run(num_tets_, FemGeoDiagOp{tets_.data(), x.data(), bm_.data(), volume_.data(), mu_.data(), lambda_.data(),
                                          geo_diag_.data()});
  }
}

Scalar FemModel::ElasticForces(const Array<Scalar>& x, Array<Scalar>* f) {
  CONDSIM_CHECK(f->size() == 3 * num_nodes_, "fem: force array has " << f->size() << " entries");
  ComputeElements(x, true, false);
  // b with v = 0, no mass terms: the gathered element forces
  kernels_->Run(num_nodes_, FemNodeRhsOp{node_ptr_.data(), node_refs_.data(), force_.data(), mass_.data(),
                                             zero_v_.data(), nullptr, Vec3(0, 0, 0), Scalar(0), f->data()});
  return backend_->Dot(energy_, ones_);
}

void FemModel::RigidPredictor(const Array<Scalar>& x, const Array<Scalar>& v, Scalar dt, Array<Scalar>* out) {
  const Index n = num_nodes_;
  CONDSIM_CHECK(x.size() == 3 * n && v.size() == 3 * n, "FemModel::RigidPredictor: x or v does not hold 3 entries per node");
  if (rigid_mass_.size() != 12 * n) {
    // once: the masses per term, the total in node order, the passes' segments
    std::vector<Scalar> m(12 * std::size_t(n));
    total_mass_ = 0;
    for (Index i = 0; i < n; ++i) {
      total_mass_ += mass_host_[std::size_t(i)];
      for (int k = 0; k < 12; ++k) m[std::size_t(k * n + i)] = mass_host_[std::size_t(i)];
    }
    rigid_mass_.Assign(backend_, m);
    rigid_terms_.Resize(backend_, 12 * n);
    rigid_sums_.Resize(backend_, 12);
    std::vector<Index> first(7), second(13);
    for (Index k = 0; k <= 6; ++k) first[std::size_t(k)] = k * n;
    for (Index k = 0; k <= 12; ++k) second[std::size_t(k)] = k * n;
    moment_segments_.Assign(backend_, first);
    inertia_segments_.Assign(backend_, second);
  }
  // pass 1: the momentum p and the mass moment, the centre of mass c
  kernels_->Run(n, RigidMomentTermsOp{x.data(), v.data(), n, rigid_terms_.data()});
  rigid_sums_.Resize(6);
  backend_->SegmentedDot(rigid_terms_, rigid_mass_, moment_segments_, &rigid_sums_);
  std::vector<Scalar> s = rigid_sums_.ToHost();
  const Vec3 p = (1 / total_mass_) * Vec3(s[0], s[1], s[2]);
  const Vec3 c = (1 / total_mass_) * Vec3(s[3], s[4], s[5]);
  // pass 2: the angular momentum and the inertia tensor about c
  kernels_->Run(n, RigidInertiaTermsOp{x.data(), v.data(), c, n, rigid_terms_.data()});
  rigid_sums_.Resize(12);
  backend_->SegmentedDot(rigid_terms_, rigid_mass_, inertia_segments_, &rigid_sums_);
  s = rigid_sums_.ToHost();
  const Vec3 l(s[0], s[1], s[2]);
  const Mat3 inertia(s[3], s[4], s[5], s[6], s[7], s[8], s[9], s[10], s[11]);
  const Scalar det = Determinant(inertia), trace = Trace(inertia);
  const Vec3 omega = det > Scalar(1e-12) * trace * trace * trace ? Inverse(inertia) * l : Vec3(0, 0, 0);
  const Mat3 chord = (1 / dt) * (ToMatrix(FromRotationVector(dt * omega)) - Mat3::Identity());
  out->Resize(backend_, 3 * n);
  kernels_->Run(n, RigidPredictorOp{x.data(), p, chord, c, out->data()});
}

void FemModel::Assemble(const Array<Scalar>& x, const Array<Scalar>& v, Scalar dt, const Vec3& gravity,
                        const Array<Scalar>* f_ext, DeviceBlockMatrix* a, Array<Scalar>* b,
                        const Array<Scalar>* linearize_at) {
  CONDSIM_CHECK(std::isfinite(dt) && dt > 0, "fem: time step must be > 0 [s], got " << dt);
  const Index n = 3 * num_nodes_;
  CONDSIM_CHECK(v.size() == n && b->size() == n, "fem: v and b need " << n << " entries");
  CONDSIM_CHECK(f_ext == nullptr || f_ext->size() == n, "fem: f_ext needs " << n << " entries");
  CONDSIM_CHECK(linearize_at == nullptr || linearize_at->size() == n, "fem: the linearization point needs " << n << " entries");
  CONDSIM_CHECK(a->pattern().nnz_blocks() == pattern_.nnz_blocks() && a->pattern().block_rows == pattern_.block_rows,
                "fem: the matrix was not created from this model's pattern");
  if (linearize_at != nullptr) {
    kernels_->Run(n, MidpointOp{x.data(), linearize_at->data(), dt / 2, x_mid_.data()});
    ComputeElements(x_mid_, false, material_.geometric_stiffness);
  } else {
    ComputeElements(x, false, material_.geometric_stiffness);
  }
  kernels_->Run(num_nodes_, FemNodeRhsOp{node_ptr_.data(), node_refs_.data(), force_.data(), mass_.data(),
                                             v.data(), f_ext != nullptr ? f_ext->data() : nullptr, gravity,
                                             Scalar(2) / dt, b->data()});
  // A = (2/t + alpha) M + (t/2 + beta) K   (eq. 9 with Rayleigh damping)
  const Scalar mass_coeff = Scalar(2) / dt + Scalar(material_.rayleigh_alpha);
  const Scalar stiffness_coeff = dt / 2 + Scalar(material_.rayleigh_beta);
  kernels_->Run(pattern_.nnz_blocks(),
                   FemBlockOp{block_ptr_.data(), block_refs_.data(), block_row_.data(), a->col_idx().data(), bm_.data(),
                              volume_.data(), mu_.data(), lambda_.data(), rotation_.data(), mass_.data(),
                              mass_coeff, stiffness_coeff, a->mutable_values().data()});
  if (material_.geometric_stiffness) {
    kernels_->Run(pattern_.nnz_blocks(),
                  FemGeometricBlockOp{block_ptr_.data(), block_refs_.data(), tets_.data(),
                                      linearize_at != nullptr ? x_mid_.data() : x.data(), geo_diag_.data(), stiffness_coeff,
                                      a->mutable_values().data()});
  }
  if (linearize_at != nullptr) {
    // Newton (eq. 10): b += (t/2) K v-hat, from A v-hat without the mass part
    a->Multiply(1, *linearize_at, 0, &r_);
    kernels_->Run(n, NewtonRhsOp{mass_.data(), linearize_at->data(), r_.data(), mass_coeff,
                                       (dt / 2) / stiffness_coeff, b->data()});
  }
  if (num_links_ > 0) {
    kernels_->Run(pattern_.nnz_blocks(), LinkBlockOp{link_block_ptr_.data(), link_block_refs_.data(), link_k_.data(),
                                                           dt / 2, a->mutable_values().data()});
    kernels_->Run(num_nodes_, LinkRhsOp{link_node_ptr_.data(), link_node_refs_.data(), link_i_.data(), link_j_.data(),
                                           link_k_.data(), x.data(), b->data()});
  }
  if (num_attached_ > 0) {
    kernels_->Run(num_attached_, AttachOp{attach_nodes_.data(), attach_block_.data(), attach_k_.data(), attach_p_.data(),
                                             attach_v_.data(), x.data(), dt / 2, a->mutable_values().data(), b->data()});
  }
  if (!prescribed_nodes_.empty()) {
    kernels_->Run(num_nodes_, DirichletRowOp{a->row_ptr().data(), a->col_idx().data(), prescribed_.data(),
                                                   v_prescribed_.data(), a->mutable_values().data(), b->data()});
  }
}

}  // namespace condsim
