// The body-mode test systems (tests/cond_body_modes_test.cpp, cond_body_mode_transfers_test.cpp):
// eq. 9 systems of a free FEM ball and a clamped plate, patches from GridPatches, and one COND
// solve from rest.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "models/cond/cond_solver.h"
#include "models/fem/fem_model.h"
#include "models/fem/tet_mesh.h"

namespace condsim::test {

inline constexpr Scalar kDt = 0.01;

// one body: the mesh's nodes in GridPatches patches, arms from each patch's mean position
inline BodyModes PatchModes(const TetMesh& mesh, Index patches) {
  BodyModes m;
  AppendBodyPatches(GridPatches(mesh.x, patches), mesh.x, 0, &m);
  return m;
}

// one COND solve of A v = b (+ contacts) from v = 0, with body modes when given
inline CondStats SolveFromRest(Backend* backend, DeviceBlockMatrix& a, const Array<Scalar>& b, const CondParams& p, const BodyModes* modes,
                        const ContactSet& contacts, std::vector<Scalar>* v, std::vector<Scalar>* lambda) {
  CondSolver solver(backend, p);
  if (modes != nullptr) solver.SetBodyModes(*modes);
  solver.SetContacts(contacts);
  Array<Scalar> vd(backend, std::vector<Scalar>(std::size_t(b.size()), 0));
  const CondStats st = solver.Solve(a, b, &vd);
  *v = vd.ToHost();
  if (lambda != nullptr) *lambda = solver.Impulses();
  return st;
}

// the eq. 9 system of a free FEM ball of radius 4 cm under gravity, moving with a spin, a
// breathing (radial) velocity and a shear, so that v-hat has rigid and elastic parts
struct BallSystem {
  std::unique_ptr<Backend> backend;
  TetMesh mesh = MakeSphereMesh(Vec3(0, 0, 0.04), 0.04, 0.016);
  FemMaterial material = [] {
    FemMaterial m;
    m.young = 1e6;
    m.poisson = 0.35;
    m.density = 1000;
    return m;
  }();
  FemModel model{backend.get(), mesh, material, "ball"};
  std::unique_ptr<DeviceBlockMatrix> a = backend->CreateMatrix(model.pattern());
  Array<Scalar> b{backend.get(), Index(mesh.x.size())};

  explicit BallSystem(BackendChoice choice = BackendChoice::kCpu) : backend(MakeBackend(choice).backend) {
    std::vector<Scalar> v0(mesh.x.size());
    for (Index i = 0; i < mesh.num_nodes(); ++i) {
      const Vec3 r = mesh.Node(i) - Vec3(0, 0, 0.04);
      const Vec3 vi = Cross(Vec3(0, 0, 3), r) + 2.0 * r + Vec3(5 * r[2], 0, 0);
      for (int d = 0; d < 3; ++d) v0[3 * std::size_t(i) + d] = vi[d];
    }
    Array<Scalar> x(backend.get(), mesh.x), v(backend.get(), v0);
    model.Assemble(x, v, kDt, Vec3(0, 0, -9.81), nullptr, a.get(), &b);
  }
  BodyModes Modes(Index patches = 1) const { return PatchModes(mesh, patches); }
  // the nodes within 4 mm of the floor, in S-contact with it as if touching (phi = 0)
  ContactSet FloorContacts() const {
    ContactSet c;
    for (Index i = 0; i < mesh.num_nodes(); ++i)
      if (mesh.Node(i)[2] < 0.004) c.Add(i, -1, ContactFrame(Vec3(0, 0, 1)), 0, 0.5, 0.5);
    return c;
  }
  CondStats Solve(const CondParams& p, bool modes, const ContactSet& contacts, std::vector<Scalar>* v,
                  std::vector<Scalar>* lambda = nullptr, Index patches = 1) {
    const BodyModes m = Modes(patches);
    return SolveFromRest(backend.get(), *a, b, p, modes ? &m : nullptr, contacts, v, lambda);
  }
};

// the eq. 9 system of a thin plate (by default 20 x 5 x 0.5 cm, E 0.1 MPa) clamped at x = 0 (prescribed
// nodes at rest), at rest under gravity: its slow motions are bending, which the rigid modes of
// the whole plate cannot represent
struct PlateSystem {
  std::unique_ptr<Backend> backend = MakeBackend(BackendChoice::kCpu).backend;
  TetMesh mesh;
  std::unique_ptr<FemModel> model;
  std::unique_ptr<DeviceBlockMatrix> a;
  Array<Scalar> b{backend.get(), Index(mesh.x.size())};

  explicit PlateSystem(TetMesh plate = MakeBoxMesh(Vec3(0, 0, 0), Vec3(0.2, 0.05, 0.005), 24, 6, 1)) : mesh(std::move(plate)) {
    FemMaterial m;
    m.young = 1e5;
    m.poisson = 0.35;
    m.density = 1100;
    model = std::make_unique<FemModel>(backend.get(), mesh, m, "plate");
    std::vector<Index> clamped;
    for (Index i = 0; i < mesh.num_nodes(); ++i)
      if (mesh.Node(i)[0] < 1e-9) clamped.push_back(i);
    model->SetPrescribedNodes(clamped);
    model->SetPrescribedVelocities(std::vector<Scalar>(3 * clamped.size(), 0));
    a = backend->CreateMatrix(model->pattern());
    Array<Scalar> x(backend.get(), mesh.x), v(backend.get(), std::vector<Scalar>(mesh.x.size(), 0));
    model->Assemble(x, v, kDt, Vec3(0, 0, -9.81), nullptr, a.get(), &b);
  }
  CondStats Solve(const CondParams& p, Index patches, const ContactSet& contacts, std::vector<Scalar>* v,
                  std::vector<Scalar>* lambda = nullptr) {
    const BodyModes m = PatchModes(mesh, patches);
    return SolveFromRest(backend.get(), *a, b, p, &m, contacts, v, lambda);
  }
};

}  // namespace condsim::test
