// Tetrahedral mesh input: TetGen .node/.ele, Gmsh .msh (2.2 and 4.1 ASCII), legacy VTK
// unstructured grids (ASCII), and surface meshes (.stl ASCII/binary, .obj, .off, .ply ASCII)
// tetrahedralized with the TetGen library when condsim was built with it. Coordinates are taken
// as metres. Errors name the file and line; notes (ignored element types, flipped orientation,
// unused nodes) are returned with the mesh.
#pragma once

#include <string>
#include <vector>

#include "models/fem/tet_mesh.h"  // TetMesh, SurfaceMesh

namespace condsim {

struct MeshReadResult {
  TetMesh mesh;
  std::vector<std::string> notes;
};

struct TetgenOptions {
  double max_volume = 0;         // largest tetrahedron volume [m^3]; 0 = no limit
  double radius_edge_ratio = 1.5;  // quality bound (TetGen -q)
};

// reads any supported format, chosen by the file extension (.node and .ele name the same TetGen
// pair); validates the result (ValidateMesh) and throws condsim::Error on any problem
MeshReadResult ReadTetMesh(const std::string& path, const TetgenOptions& tetgen = {});

// the individual readers (no validation)
MeshReadResult ReadTetgen(const std::string& node_path, const std::string& ele_path);
MeshReadResult ReadGmsh(const std::string& path);
MeshReadResult ReadVtk(const std::string& path);

SurfaceMesh ReadSurface(const std::string& path);
// throws condsim::Error naming `source` unless the surface is closed and manifold (every edge
// in exactly two triangles, once in each direction), has no degenerate triangle (area below
// 1e-12 of the squared mean edge) and encloses a volume
void CheckClosedSurface(const SurfaceMesh& surface, const std::string& source);
// tetrahedralizes a closed surface (CheckClosedSurface first) with TetGen; throws when condsim
// was built without TetGen
MeshReadResult Tetrahedralize(const SurfaceMesh& surface, const TetgenOptions& options, const std::string& source);

// true when the TetGen library was found at build time
bool HaveTetgen();

}  // namespace condsim
