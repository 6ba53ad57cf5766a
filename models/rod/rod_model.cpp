// Cosserat-rod cables: geometry generators, joint setup and assembly on a backend.
#include "models/rod/rod_model.h"

#include <cmath>

#include "condsim/error.h"
#include "models/rod/rod_kernels.h"

namespace condsim {
namespace {

constexpr double kPi = 3.14159265358979323846;

// the smallest rotation taking unit vector a to unit vector b
Mat3 MinimalRotation(const Vec3& a, const Vec3& b) {
  const Vec3 axis = Cross(a, b);
  const Scalar s = Norm(axis), c = Dot(a, b);
  if (s < 1e-14) return c > 0 ? Mat3::Identity() : ToMatrix(FromRotationVector(kPi * Normalized(Cross(a, std::fabs(a[0]) < 0.9 ? Vec3(1, 0, 0) : Vec3(0, 1, 0)))));
  return ToMatrix(FromRotationVector(std::atan2(s, c) / s * axis));
}

}  // namespace

void RodMaterial::Validate(const std::string& where) const {
  CONDSIM_CHECK(std::isfinite(radius) && radius > 0, where << ": rod radius must be > 0 [m], got " << radius);
  CONDSIM_CHECK(std::isfinite(young) && young > 0, where << ": rod young must be > 0 [Pa], got " << young);
  CONDSIM_CHECK(std::isfinite(poisson) && poisson > -1 && poisson < 0.5, where << ": rod poisson must be in (-1, 0.5), got " << poisson);
  CONDSIM_CHECK(std::isfinite(density) && density > 0, where << ": rod density must be > 0 [kg/m^3], got " << density);
  CONDSIM_CHECK(std::isfinite(rayleigh_alpha) && rayleigh_alpha >= 0, where << ": rod rayleigh_alpha must be >= 0");
  CONDSIM_CHECK(std::isfinite(rayleigh_beta) && rayleigh_beta >= 0, where << ": rod rayleigh_beta must be >= 0");
  CONDSIM_CHECK(std::isfinite(geometric_stiffness_scale) && geometric_stiffness_scale > 0,
                where << ": rod geometric_stiffness_scale must be > 0, got " << geometric_stiffness_scale);
}

RodGeometry MakeStraightRod(const Vec3& start, const Vec3& direction, double length, Index segments) {
  CONDSIM_CHECK(segments >= 1, "straight rod: needs at least 1 segment, got " << segments);
  CONDSIM_CHECK(length > 0 && std::isfinite(length), "straight rod: length must be > 0 [m], got " << length);
  CONDSIM_CHECK(Norm(direction) > 0, "straight rod: direction must be nonzero");
  RodGeometry g;
  g.segment_length = length / segments;
  const Vec3 d = Normalized(direction);
  const Quat frame = FromMatrix(FrameAround(Normalized(d)));
  for (Index s = 0; s < segments; ++s) {
    g.centers.push_back(start + (g.segment_length * (s + 0.5)) * d);
    g.frames.push_back(frame);
  }
  return g;
}

RodGeometry MakePolylineRod(const std::vector<Vec3>& points, Index segments) {
  CONDSIM_CHECK(points.size() >= 2, "polyline rod: needs at least 2 points");
  CONDSIM_CHECK(segments >= 1, "polyline rod: needs at least 1 segment");
  std::vector<double> arc{0};
  for (std::size_t i = 1; i < points.size(); ++i) {
    const double len = Norm(points[i] - points[i - 1]);
    CONDSIM_CHECK(len > 0, "polyline rod: points " << i - 1 << " and " << i << " coincide");
    arc.push_back(arc.back() + len);
  }
  auto at = [&](double s) {
    std::size_t i = 1;
    while (i + 1 < arc.size() && arc[i] < s) ++i;
    const double u = (s - arc[i - 1]) / (arc[i] - arc[i - 1]);
    return points[i - 1] + u * (points[i] - points[i - 1]);
  };
  RodGeometry g;
  g.segment_length = arc.back() / segments;
  std::vector<Vec3> joints;
  for (Index k = 0; k <= segments; ++k) joints.push_back(at(arc.back() * k / segments));
  Mat3 frame = FrameAround(Normalized(joints[1] - joints[0]));
  Vec3 prev = Normalized(joints[1] - joints[0]);
  for (Index s = 0; s < segments; ++s) {
    const Vec3 t = Normalized(joints[s + 1] - joints[s]);
    frame = MinimalRotation(prev, t) * frame;  // parallel transport: no twist
    prev = t;
    g.centers.push_back(0.5 * (joints[s] + joints[s + 1]));
    g.frames.push_back(FromMatrix(frame));
  }
  return g;
}

RodModel::RodModel(Backend* backend, const RodGeometry& geometry, const RodMaterial& material,
                   const RodEnd& start_end, const RodEnd& finish_end, const std::string& source)
    : RodModel(backend, std::vector<RodGeometry>{geometry}, material, start_end, finish_end, source) {}

RodModel::RodModel(Backend* backend, const std::vector<RodGeometry>& cables, const RodMaterial& material,
                   const RodEnd& start_end, const RodEnd& finish_end, const std::string& source)
    : backend_(backend), material_(material), kernels_(MakeKernels<RodKernels>(*backend)) {
  material.Validate(source);
  CONDSIM_CHECK(!cables.empty(), source << ": no cables");
  for (int e = 0; e < 2; ++e) {
    const RodEnd& end = e == 0 ? start_end : finish_end;
    CONDSIM_CHECK(!end.attached || (std::isfinite(end.stiffness_scale) && end.stiffness_scale > 0),
                  source << ": end " << e << " stiffness_scale must be > 0");
  }
  // flattened segments; cable c owns segments cable_start_[c] .. cable_start_[c+1]-1
  std::vector<Vec3> centers;
  std::vector<Mat3> frames;
  std::vector<double> seg_length;
  cable_start_.assign(1, 0);
  for (std::size_t c = 0; c < cables.size(); ++c) {
    const RodGeometry& g = cables[c];
    CONDSIM_CHECK(!g.centers.empty() && g.frames.size() == g.centers.size(),
                  source << ": cable " << c << " needs at least one segment and one frame per segment");
    CONDSIM_CHECK(g.segment_length > 0, source << ": cable " << c << " segment_length must be > 0 [m]");
    for (std::size_t s = 0; s < g.centers.size(); ++s) {
      centers.push_back(g.centers[s]);
      frames.push_back(ToMatrix(Normalized(g.frames[s])));
      seg_length.push_back(g.segment_length);
    }
    cable_start_.push_back(CheckedIndex(centers.size(), "rod segments"));
  }
  segments_ = cable_start_.back();
  CheckedIndex(std::size_t(segments_) * 6, "rod DOFs");
  length_ = cables[0].segment_length;
  const double r = material.radius, area = kPi * r * r, i_bend = kPi * r * r * r * r / 4, j_twist = kPi * r * r * r * r / 2;
  std::vector<Scalar> masses, inertia;
  for (double len : seg_length) {
    const double m = material.density * area * len;
    masses.push_back(Scalar(m));
    inertia.insert(inertia.end(), {Scalar(m * (3 * r * r + len * len) / 12), Scalar(m * (3 * r * r + len * len) / 12), Scalar(m * r * r / 2)});
  }
  mass_host_ = masses[0];
  inertia_host_.assign(inertia.begin(), inertia.begin() + 3);
  auto stiffness = [&](double span, double scale) {
    const double g = material.Shear();
    return std::vector<Scalar>{Scalar(scale * g * area / span),        Scalar(scale * g * area / span),
                               Scalar(scale * material.young * area / span), Scalar(scale * material.young * i_bend / span),
                               Scalar(scale * material.young * i_bend / span), Scalar(scale * g * j_twist / span)};
  };
  // joints: the kinematic end poses (left side = pose slot 2c + end), then the internal ones
  std::vector<Index> left, right, pose;
  std::vector<Scalar> arm_l, arm_r, rest, k, pose_x, pose_q;
  auto add_joint = [&](Index l, Index rr, Index p, const Vec3& al, const Vec3& ar, const Mat3& r0, const std::vector<Scalar>& kk) {
    left.push_back(l);
    right.push_back(rr);
    pose.push_back(p);
    for (int c = 0; c < 3; ++c) {
      arm_l.push_back(al[c]);
      arm_r.push_back(ar[c]);
    }
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) rest.push_back(r0(i, j));
    k.insert(k.end(), kk.begin(), kk.end());
  };
  end_pose_joint_.assign(2 * cables.size(), -1);
  for (std::size_t c = 0; c < cables.size(); ++c) {
    for (int e = 0; e < 2; ++e) {
      const RodEnd& end = e == 0 ? start_end : finish_end;
      const Index s = e == 0 ? cable_start_[c] : cable_start_[c + 1] - 1;
      const Vec3 tip = centers[s] + (e == 0 ? -0.5 : 0.5) * seg_length[s] * frames[s].Col(2);
      for (int d = 0; d < 3; ++d) pose_x.push_back(tip[d]);
      const Quat q = FromMatrix(frames[s]);
      pose_q.insert(pose_q.end(), {q.w, q.x, q.y, q.z});
      if (!end.attached) continue;
      end_pose_joint_[2 * c + e] = static_cast<Index>(left.size());
      add_joint(-1, s, static_cast<Index>(2 * c + e), Vec3(0, 0, 0), Transpose(frames[s]) * (tip - centers[s]),
                Mat3::Identity(), stiffness(seg_length[s] / 2, end.stiffness_scale));
    }
  }
  for (std::size_t c = 0; c < cables.size(); ++c) {
    for (Index s = cable_start_[c]; s + 1 < cable_start_[c + 1]; ++s) {
      // the joint point: midway between the facing segment ends (the rest errors vanish)
      const Vec3 p = 0.5 * ((centers[s] + 0.5 * seg_length[s] * frames[s].Col(2)) +
                            (centers[s + 1] - 0.5 * seg_length[s + 1] * frames[s + 1].Col(2)));
      add_joint(s, s + 1, -1, Transpose(frames[s]) * (p - centers[s]), Transpose(frames[s + 1]) * (p - centers[s + 1]),
                Transpose(frames[s]) * frames[s + 1], stiffness(0.5 * (seg_length[s] + seg_length[s + 1]), 1.0));
    }
  }
  joints_ = static_cast<Index>(left.size());
  // pattern: every node's diagonal block and all node pairs coupled through a joint
  auto side_node = [&](Index jt, int a) { return a < 2 ? 2 * left[jt] + a : 2 * right[jt] + (a - 2); };
  std::vector<std::pair<Index, Index>> coords;
  for (Index n = 0; n < 2 * segments_; ++n) coords.push_back({n, n});
  for (Index jt = 0; jt < joints_; ++jt)
    for (int a = pose[jt] >= 0 ? 2 : 0; a < 4; ++a)
      for (int c = pose[jt] >= 0 ? 2 : 0; c < 4; ++c) coords.push_back({side_node(jt, a), side_node(jt, c)});
  pattern_ = BlockPattern::FromCoordinates(3, 2 * segments_, 2 * segments_, std::move(coords));
  std::vector<Index> node_ptr(std::size_t(2 * segments_) + 1, 0), block_ptr(std::size_t(pattern_.nnz_blocks()) + 1, 0);
  for (Index jt = 0; jt < joints_; ++jt)
    for (int a = pose[jt] >= 0 ? 2 : 0; a < 4; ++a) {
      ++node_ptr[std::size_t(side_node(jt, a)) + 1];
      for (int c = pose[jt] >= 0 ? 2 : 0; c < 4; ++c) ++block_ptr[std::size_t(pattern_.Find(side_node(jt, a), side_node(jt, c))) + 1];
    }
  for (std::size_t i = 1; i < node_ptr.size(); ++i) node_ptr[i] += node_ptr[i - 1];
  for (std::size_t i = 1; i < block_ptr.size(); ++i) block_ptr[i] += block_ptr[i - 1];
  std::vector<Index> node_refs(static_cast<std::size_t>(node_ptr.back())), block_refs(static_cast<std::size_t>(block_ptr.back()));
  std::vector<Index> nfill(node_ptr.begin(), node_ptr.end() - 1), bfill(block_ptr.begin(), block_ptr.end() - 1);
  for (Index jt = 0; jt < joints_; ++jt)
    for (int a = pose[jt] >= 0 ? 2 : 0; a < 4; ++a) {
      node_refs[nfill[side_node(jt, a)]++] = 4 * jt + a;
      for (int c = pose[jt] >= 0 ? 2 : 0; c < 4; ++c)
        block_refs[bfill[pattern_.Find(side_node(jt, a), side_node(jt, c))]++] = 16 * jt + 4 * a + c;
    }
  std::vector<Index> block_row(static_cast<std::size_t>(pattern_.nnz_blocks()));
  for (Index rr = 0; rr < pattern_.block_rows; ++rr)
    for (Index q = pattern_.row_ptr[rr]; q < pattern_.row_ptr[rr + 1]; ++q) block_row[q] = rr;
  std::vector<Scalar> x0, q0;
  for (Index s = 0; s < segments_; ++s) {
    for (int c = 0; c < 3; ++c) x0.push_back(centers[s][c]);
    const Quat q = FromMatrix(frames[s]);
    q0.insert(q0.end(), {q.w, q.x, q.y, q.z});
  }
  Backend* b = backend_;
  left_ = Array<Index>(b, left);
  right_ = Array<Index>(b, right);
  pose_ = Array<Index>(b, pose);
  node_ptr_ = Array<Index>(b, node_ptr);
  node_refs_ = Array<Index>(b, node_refs);
  block_ptr_ = Array<Index>(b, block_ptr);
  block_refs_ = Array<Index>(b, block_refs);
  block_row_ = Array<Index>(b, block_row);
  arm_l_ = Array<Scalar>(b, arm_l);
  arm_r_ = Array<Scalar>(b, arm_r);
  rest_ = Array<Scalar>(b, rest);
  k_ = Array<Scalar>(b, k);
  x_ = Array<Scalar>(b, x0);
  q_ = Array<Scalar>(b, q0);
  x_mid_ = Array<Scalar>(b, 3 * segments_);
  q_mid_ = Array<Scalar>(b, 4 * segments_);
  pose_x_ = Array<Scalar>(b, pose_x);
  pose_q_ = Array<Scalar>(b, pose_q);
  pose_v_ = Array<Scalar>(b, std::vector<Scalar>(12 * cables.size(), 0));
  jkj_ = Array<Scalar>(b, 144 * std::max<Index>(joints_, 1));
  // the geometric term's columns (RodGeoColumnOp), only with geometric stiffness
  geo_ = Array<Scalar>(b, material_.geometric_stiffness ? 144 * std::max<Index>(joints_, 1) : 1);
  force_ = Array<Scalar>(b, 12 * std::max<Index>(joints_, 1));
  energy_ = Array<Scalar>(b, std::max<Index>(joints_, 1));
  b->Fill(0, &energy_);
  mass_ = Array<Scalar>(b, masses);
  inertia_ = Array<Scalar>(b, inertia);
  ones_ = Array<Scalar>(b, std::vector<Scalar>(static_cast<std::size_t>(std::max<Index>(joints_, 1)), Scalar(1)));
  zero_v_ = Array<Scalar>(b, std::vector<Scalar>(std::size_t(6) * segments_, Scalar(0)));
  r_ = Array<Scalar>(b, 6 * segments_);
}

RodModel::~RodModel() = default;

void RodModel::SetEndPose(int end, const Vec3& position, const Quat& orientation, const Vec3& v, const Vec3& w) {
  SetEndPose(0, end, position, orientation, v, w);
}

void RodModel::SetEndPose(Index cable, int end, const Vec3& position, const Quat& orientation, const Vec3& v,
                          const Vec3& w) {
  CONDSIM_CHECK(cable >= 0 && cable < num_cables(), "rod: cable " << cable << " does not exist (" << num_cables() << " cables)");
  CONDSIM_CHECK(end == 0 || end == 1, "rod: end must be 0 (start) or 1 (finish), got " << end);
  const Index slot = 2 * cable + end;
  CONDSIM_CHECK(end_pose_joint_[slot] >= 0, "rod: end " << end << " of cable " << cable << " is free; attach it (RodEnd) to drive it");
  const Quat q = Normalized(orientation);
  const std::vector<Scalar> px = {position[0], position[1], position[2]}, pq = {q.w, q.x, q.y, q.z},
                            pv = {v[0], v[1], v[2], w[0], w[1], w[2]};
  for (Scalar value : px) CONDSIM_CHECK(std::isfinite(value), "rod: end pose is not finite");
  for (Scalar value : pv) CONDSIM_CHECK(std::isfinite(value), "rod: end pose velocity is not finite");
  backend_->CopyFromHost(pose_x_.data() + 3 * slot, px.data(), sizeof(Scalar) * 3);
  backend_->CopyFromHost(pose_q_.data() + 4 * slot, pq.data(), sizeof(Scalar) * 4);
  backend_->CopyFromHost(pose_v_.data() + 6 * slot, pv.data(), sizeof(Scalar) * 6);
}

void RodModel::ComputeJoints(const Scalar* x, const Scalar* q, Scalar half_dt, bool with_energy) {
  if (joints_ == 0) return;
  const RodJointInputs in{left_.data(), right_.data(), pose_.data(), arm_l_.data(), arm_r_.data(), x, q, pose_x_.data(), pose_q_.data()};
  kernels_->Run(joints_, RodJointOp{in, rest_.data(), k_.data(), pose_v_.data(), half_dt, jkj_.data(), force_.data(),
                                    with_energy ? energy_.data() : nullptr});
  if (material_.geometric_stiffness && !with_energy) {
    kernels_->Run(12 * joints_, RodGeoColumnOp{in, rest_.data(), k_.data(), geo_.data()});
    kernels_->Run(joints_, RodGeoDiagOp{pose_.data(), geo_.data(), Scalar(material_.geometric_stiffness_scale), jkj_.data()});
  }
}

Scalar RodModel::JointForces(Array<Scalar>* f) {
  CONDSIM_CHECK(f->size() == 6 * segments_, "rod: force array needs " << 6 * segments_ << " entries");
  ComputeJoints(x_.data(), q_.data(), 0, true);
  kernels_->Run(2 * segments_, RodRhsOp{node_ptr_.data(), node_refs_.data(), force_.data(), mass_.data(), inertia_.data(),
                                        q_.data(), zero_v_.data(), nullptr, Vec3(0, 0, 0), Scalar(0), f->data()});
  return backend_->Dot(energy_, ones_);
}

void RodModel::Assemble(const Array<Scalar>& v, Scalar dt, const Vec3& gravity, const Array<Scalar>* f_ext,
                        DeviceBlockMatrix* a, Array<Scalar>* b, const Array<Scalar>* linearize_at) {
  const Index n = 6 * segments_;
  CONDSIM_CHECK(std::isfinite(dt) && dt > 0, "rod: time step must be > 0 [s], got " << dt);
  CONDSIM_CHECK(v.size() == n && b->size() == n, "rod: v and b need " << n << " entries");
  CONDSIM_CHECK(f_ext == nullptr || f_ext->size() == n, "rod: f_ext needs " << n << " entries");
  CONDSIM_CHECK(linearize_at == nullptr || linearize_at->size() == n, "rod: the linearization point needs " << n << " entries");
  CONDSIM_CHECK(a->pattern().nnz_blocks() == pattern_.nnz_blocks() && a->pattern().block_rows == pattern_.block_rows,
                "rod: the matrix was not created from this model's pattern");
  if (linearize_at != nullptr) {
    kernels_->Run(segments_, RodAdvanceOp{x_.data(), q_.data(), linearize_at->data(), dt / 2, x_mid_.data(), q_mid_.data()});
    ComputeJoints(x_mid_.data(), q_mid_.data(), dt / 2, false);
  } else {
    ComputeJoints(x_.data(), q_.data(), dt / 2, false);
  }
  kernels_->Run(2 * segments_, RodRhsOp{node_ptr_.data(), node_refs_.data(), force_.data(), mass_.data(), inertia_.data(),
                                        q_.data(), v.data(), f_ext != nullptr ? f_ext->data() : nullptr, gravity,
                                        Scalar(2) / dt, b->data()});
  const Scalar mass_coeff = Scalar(2) / dt + Scalar(material_.rayleigh_alpha);
  const Scalar stiffness_coeff = dt / 2 + Scalar(material_.rayleigh_beta);
  kernels_->Run(pattern_.nnz_blocks(), RodBlockOp{block_ptr_.data(), block_refs_.data(), block_row_.data(),
                                                     a->col_idx().data(), jkj_.data(), mass_.data(), inertia_.data(),
                                                     q_.data(), mass_coeff, stiffness_coeff, a->mutable_values().data()});
  if (linearize_at != nullptr) {
    a->Multiply(1, *linearize_at, 0, &r_);
    kernels_->Run(2 * segments_, RodNewtonRhsOp{mass_.data(), inertia_.data(), q_.data(), linearize_at->data(),
                                                      r_.data(), mass_coeff, (dt / 2) / stiffness_coeff, b->data()});
  }
}

void RodModel::Advance(const Array<Scalar>& vhat, Scalar dt) {
  CONDSIM_CHECK(vhat.size() == 6 * segments_, "rod: v-hat needs " << 6 * segments_ << " entries");
  kernels_->Run(segments_, RodAdvanceOp{x_.data(), q_.data(), vhat.data(), dt, x_.data(), q_.data()});
}

}  // namespace condsim
