// Mesh readers: a unit cube written here in every format must read back as the generator's mesh
// (same nodes and tetrahedra, volume 1 m^3); surfaces go through TetGen and keep the enclosed
// volume (1e-12); malformed files fail with the file, the line and the problem.
#include "io/mesh_io.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>

#include "condsim/error.h"

namespace condsim {
namespace {

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

const TetMesh& Cube() {
  static const TetMesh cube = MakeBoxMesh(Vec3(0, 0, 0), Vec3(1, 1, 1), 1, 1, 1);
  return cube;
}

double Volume(const TetMesh& m) {
  double v = 0;
  for (Index e = 0; e < m.num_tets(); ++e) v += TetVolume(m, e);
  return v;
}

void ExpectSameAsCube(const MeshReadResult& r) {
  EXPECT_EQ(r.mesh.x, Cube().x);
  EXPECT_EQ(r.mesh.tets, Cube().tets);
}

std::string NodeText(int base) {
  std::string s = "# cube\n8 3 0 0\n";
  for (Index i = 0; i < 8; ++i) {
    const Vec3 p = Cube().Node(i);
    s += std::to_string(i + base) + " " + std::to_string(p[0]) + " " + std::to_string(p[1]) + " " + std::to_string(p[2]) + "\n";
  }
  return s;
}

std::string EleText(int base, bool flip) {
  std::string s = "6 4 0\n";
  for (Index e = 0; e < 6; ++e) {
    const Index* t = Cube().tets.data() + 4 * e;
    const Index order[4] = {t[0], t[1], flip ? t[3] : t[2], flip ? t[2] : t[3]};
    s += std::to_string(e + base);
    for (Index a : order) s += " " + std::to_string(a + base);
    s += "\n";
  }
  return s;
}

TEST(MeshIo, TetgenNodeEleIsReadInEitherNumberingAndOrientation) {
  Write("cube0.node", NodeText(0));
  const std::string ele0 = Write("cube0.ele", EleText(0, false));
  ExpectSameAsCube(ReadTetMesh(ele0));
  Write("cube1.node", NodeText(1));
  Write("cube1.ele", EleText(1, true));
  const MeshReadResult flipped = ReadTetMesh(::testing::TempDir() + "/cube1.node");
  EXPECT_NEAR(Volume(flipped.mesh), 1.0, 1e-15);
  ASSERT_FALSE(flipped.notes.empty());
  EXPECT_NE(flipped.notes[0].find("flipped to positive"), std::string::npos);
}

TEST(MeshIo, GmshVersionsTwoAndFour) {
  std::string v2 = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n8\n";
  for (Index i = 0; i < 8; ++i) {
    const Vec3 p = Cube().Node(i);
    v2 += std::to_string(i + 1) + " " + std::to_string(p[0]) + " " + std::to_string(p[1]) + " " + std::to_string(p[2]) + "\n";
  }
  v2 += "$EndNodes\n$Elements\n7\n1 2 2 0 1 1 2 3\n";  // a triangle first: ignored with a note
  for (Index e = 0; e < 6; ++e) {
    v2 += std::to_string(e + 2) + " 4 2 0 1";
    for (int a = 0; a < 4; ++a) v2 += " " + std::to_string(Cube().tets[4 * e + a] + 1);
    v2 += "\n";
  }
  v2 += "$EndElements\n";
  const MeshReadResult r2 = ReadTetMesh(Write("cube22.msh", v2));
  ExpectSameAsCube(r2);
  ASSERT_EQ(r2.notes.size(), 1u);
  EXPECT_NE(r2.notes[0].find("ignored 1 non-tetrahedral element(s) of gmsh type 2"), std::string::npos);
  // 4.1: node tags 101..108 in two entity blocks, an $Entities section to skip
  std::string v4 = "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Entities\n0 0 0 1\n1 0 0 0 1 1 1 0 0\n$EndEntities\n";
  v4 += "$Nodes\n2 8 101 108\n3 1 0 4\n101\n102\n103\n104\n";
  for (Index i = 0; i < 4; ++i) {
    const Vec3 p = Cube().Node(i);
    v4 += std::to_string(p[0]) + " " + std::to_string(p[1]) + " " + std::to_string(p[2]) + "\n";
  }
  v4 += "3 1 0 4\n105\n106\n107\n108\n";
  for (Index i = 4; i < 8; ++i) {
    const Vec3 p = Cube().Node(i);
    v4 += std::to_string(p[0]) + " " + std::to_string(p[1]) + " " + std::to_string(p[2]) + "\n";
  }
  v4 += "$EndNodes\n$Elements\n1 6 1 6\n3 1 4 6\n";
  for (Index e = 0; e < 6; ++e) {
    v4 += std::to_string(e + 1);
    for (int a = 0; a < 4; ++a) v4 += " " + std::to_string(Cube().tets[4 * e + a] + 101);
    v4 += "\n";
  }
  v4 += "$EndElements\n";
  ExpectSameAsCube(ReadTetMesh(Write("cube41.msh", v4)));
}

TEST(MeshIo, LegacyVtkUnstructuredGrid) {
  std::string s = "# vtk DataFile Version 3.0\nunit cube\nASCII\nDATASET UNSTRUCTURED_GRID\nPOINTS 8 double\n";
  for (Index i = 0; i < 8; ++i) {
    const Vec3 p = Cube().Node(i);
    s += std::to_string(p[0]) + " " + std::to_string(p[1]) + " " + std::to_string(p[2]) + "\n";
  }
  s += "CELLS 7 34\n3 0 1 2\n";
  for (Index e = 0; e < 6; ++e) {
    s += "4";
    for (int a = 0; a < 4; ++a) s += " " + std::to_string(Cube().tets[4 * e + a]);
    s += "\n";
  }
  s += "CELL_TYPES 7\n5\n10\n10\n10\n10\n10\n10\n";
  const MeshReadResult r = ReadTetMesh(Write("cube.vtk", s));
  ExpectSameAsCube(r);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("VTK type 5"), std::string::npos);
}

void ExpectError(const std::string& path, const std::string& fragment) {
  try {
    ReadTetMesh(path);
    ADD_FAILURE() << "no error reading " << path;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(MeshIo, MalformedFilesFailWithFileLineAndProblem) {
  Write("short.node", "8 3 0 0\n0 0 0 0\n1 1 0 0\n");
  Write("short.ele", EleText(0, false));
  ExpectError(::testing::TempDir() + "/short.ele", "short.node:3: unexpected end of file, expected a point number");
  Write("range.node", NodeText(0));
  Write("range.ele", "1 4 0\n0 0 1 2 9\n");
  ExpectError(::testing::TempDir() + "/range.ele", "range.ele:2: node index 9 is out of range");
  ExpectError(Write("bad.msh", "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n1\n1 0 0 x\n$EndNodes\n"),
              "bad.msh:6: expected a coordinate, found 'x'");
  ExpectError(Write("cube.xyz", "1 2 3"), "unknown mesh extension '.xyz'");
  ExpectError(::testing::TempDir() + "/missing.msh", "missing.msh: cannot open the file");
  // one inverted element among positive ones is an error, not a convention
  Write("mixed.node", NodeText(0));
  std::string ele = EleText(0, false);
  const std::string flipped_line = "2 " + std::to_string(Cube().tets[8]) + " " + std::to_string(Cube().tets[9]) + " " +
                                   std::to_string(Cube().tets[11]) + " " + std::to_string(Cube().tets[10]);
  ele.replace(ele.find("\n2 ") + 1, flipped_line.size(), flipped_line);
  Write("mixed.ele", ele);
  ExpectError(::testing::TempDir() + "/mixed.ele", "mixed.ele: 1 inverted tetrahedra (negative volume), the first is element 2");
}

// the unit cube's 12 surface triangles, outward normals
std::vector<std::array<Vec3, 3>> CubeTriangles() {
  const Vec3 c[8] = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}, {0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {0, 1, 1}};
  const int quads[6][4] = {{0, 3, 2, 1}, {4, 5, 6, 7}, {0, 1, 5, 4}, {2, 3, 7, 6}, {1, 2, 6, 5}, {0, 4, 7, 3}};
  std::vector<std::array<Vec3, 3>> t;
  for (const auto& q : quads) {
    t.push_back({c[q[0]], c[q[1]], c[q[2]]});
    t.push_back({c[q[0]], c[q[2]], c[q[3]]});
  }
  return t;
}

TEST(MeshIo, SurfaceMeshesAreTetrahedralizedWithTetgen) {
  std::string stl = "solid cube\n";
  for (const auto& tri : CubeTriangles()) {
    stl += "facet normal 0 0 0\nouter loop\n";
    for (const Vec3& p : tri) stl += "vertex " + std::to_string(p[0]) + " " + std::to_string(p[1]) + " " + std::to_string(p[2]) + "\n";
    stl += "endloop\nendfacet\n";
  }
  stl += "endsolid cube\n";
  std::string bin(84, '\0');
  const std::uint32_t count = 12;
  std::memcpy(&bin[80], &count, 4);
  for (const auto& tri : CubeTriangles()) {
    std::string rec(50, '\0');
    for (int v = 0; v < 3; ++v) {
      const float f[3] = {float(tri[v][0]), float(tri[v][1]), float(tri[v][2])};
      std::memcpy(&rec[12 + 12 * v], f, 12);
    }
    bin += rec;
  }
  const std::string obj = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 0 1\nv 1 0 1\nv 1 1 1\nv 0 1 1\n"
                          "f 1 4 3 2\nf 5 6 7 8\nf 1/1 2/1 6/1 5/1\nf 3 4 8 7\nf 2 3 7 6\nf 1 5 8 4\n";
  const std::string off = "OFF\n8 6 0\n0 0 0\n1 0 0\n1 1 0\n0 1 0\n0 0 1\n1 0 1\n1 1 1\n0 1 1\n"
                          "4 0 3 2 1\n4 4 5 6 7\n4 0 1 5 4\n4 2 3 7 6\n4 1 2 6 5\n4 0 4 7 3\n";
  const std::string ply = "ply\nformat ascii 1.0\nelement vertex 8\nproperty float x\nproperty float y\nproperty float z\n"
                          "element face 6\nproperty list uchar int vertex_indices\nend_header\n" +
                          off.substr(off.find("0 0 0\n"));
  const std::vector<std::string> paths = {Write("cube.stl", stl), Write("cube_bin.stl", bin), Write("cube.obj", obj),
                                          Write("cube.off", off), Write("cube.ply", ply)};
  for (const std::string& path : paths) {
    SCOPED_TRACE(path);
    const SurfaceMesh s = ReadSurface(path);
    EXPECT_EQ(s.triangles.size(), 36u);
    if (!HaveTetgen()) {
      ExpectError(path, "surface meshes need TetGen");
      continue;
    }
    TetgenOptions opt;
    opt.max_volume = 0.01;
    const MeshReadResult r = ReadTetMesh(path, opt);
    EXPECT_NEAR(Volume(r.mesh), 1.0, 1e-12);
    EXPECT_GT(r.mesh.num_tets(), 100);  // the volume bound refines
    for (Index e = 0; e < r.mesh.num_tets(); ++e) ASSERT_LE(TetVolume(r.mesh, e), 0.01 * (1 + 1e-9));
  }
  ExpectError(Write("open.off", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 5\n"), "vertex index 5 is out of range");
}

}  // namespace
}  // namespace condsim
