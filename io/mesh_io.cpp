// Tetrahedral mesh readers (TetGen, Gmsh, VTK) and ReadTetMesh. Every error names the file and,
// where it applies, the line.
#include "io/mesh_io.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <unordered_map>

#include "condsim/build_info.h"
#include "condsim/error.h"
#include "io/mesh_text.h"

namespace condsim {

using mesh_text::CheckedCount;
using mesh_text::Extension;
using mesh_text::FixOrientation;
using mesh_text::ReadAll;
using mesh_text::Tokens;

bool HaveTetgen() { return CONDSIM_HAVE_TETGEN != 0; }

MeshReadResult ReadTetgen(const std::string& node_path, const std::string& ele_path) {
  MeshReadResult r;
  Tokens nodes(node_path, ReadAll(node_path), true);
  const Index n = CheckedCount(nodes, nodes.Integer("the number of points"), "points");
  const long long dim = nodes.Integer("the dimension");
  if (dim != 3) nodes.Fail("dimension must be 3, got " + std::to_string(dim));
  const long long attributes = nodes.Integer("the number of attributes");
  const long long markers = nodes.Integer("the boundary-marker flag");
  long long base = -1;
  r.mesh.x.resize(std::size_t(n) * 3);
  for (Index i = 0; i < n; ++i) {
    const long long id = nodes.Integer("a point number");
    if (i == 0) base = id;
    if (id != base + i) nodes.Fail("point numbers must be consecutive, expected " + std::to_string(base + i));
    for (int c = 0; c < 3; ++c) r.mesh.x[3 * std::size_t(i) + c] = nodes.Number("a coordinate");
    for (long long a = 0; a < attributes + (markers ? 1 : 0); ++a) nodes.Number("an attribute");
  }
  Tokens ele(ele_path, ReadAll(ele_path), true);
  const Index m = CheckedCount(ele, ele.Integer("the number of tetrahedra"), "tetrahedra");
  const long long per = ele.Integer("the nodes per tetrahedron");
  if (per != 4 && per != 10) ele.Fail("nodes per tetrahedron must be 4 or 10, got " + std::to_string(per));
  const long long region = ele.Integer("the region-attribute flag");
  for (Index e = 0; e < m; ++e) {
    ele.Integer("a tetrahedron number");
    for (long long a = 0; a < per; ++a) {
      const long long id = ele.Integer("a node index") - base;
      if (id < 0 || id >= n) ele.Fail("node index " + std::to_string(id + base) + " is out of range");
      if (a < 4) r.mesh.tets.push_back(static_cast<Index>(id));
    }
    if (region) ele.Number("a region attribute");
  }
  if (per == 10) r.notes.push_back(ele_path + ": 10-node tetrahedra read as linear (corner nodes only)");
  return r;
}

MeshReadResult ReadGmsh(const std::string& path) {
  MeshReadResult r;
  Tokens t(path, ReadAll(path), false);
  t.Expect("$MeshFormat");
  const std::string version = t.Word("the format version");
  const long long file_type = t.Integer("the file type");
  t.Integer("the data size");
  if (file_type != 0) t.Fail("binary .msh files are not supported; save as ASCII");
  const bool v4 = version.rfind("4", 0) == 0;
  if (!v4 && version.rfind("2", 0) != 0) t.Fail("unsupported .msh version " + version + " (2.2 and 4.1 are read)");
  t.Expect("$EndMeshFormat");
  std::unordered_map<long long, Index> node_index;
  std::map<long long, long long> ignored;  // element type -> count
  auto node_of = [&](long long tag) {
    const auto it = node_index.find(tag);
    if (it == node_index.end()) t.Fail("element refers to undefined node " + std::to_string(tag));
    return it->second;
  };
  auto add_node = [&](long long tag, double x, double y, double z) {
    if (!node_index.emplace(tag, Index(node_index.size())).second) t.Fail("node " + std::to_string(tag) + " defined twice");
    r.mesh.x.insert(r.mesh.x.end(), {x, y, z});
  };
  // gmsh element types: 4 = 4-node tetrahedron, 11 = 10-node tetrahedron
  auto nodes_per_type = [&](long long type) -> int {
    static const std::map<long long, int> count = {{1, 2}, {2, 3}, {3, 4}, {4, 4}, {5, 8}, {6, 6}, {7, 5}, {8, 3},
                                                   {9, 6}, {10, 9}, {11, 10}, {12, 27}, {15, 1}, {16, 8}, {17, 20}};
    const auto it = count.find(type);
    if (it == count.end()) t.Fail("unknown element type " + std::to_string(type));
    return it->second;
  };
  bool have_nodes = false, have_elements = false;
  while (!t.Done()) {
    const std::string section = t.Word("a section");
    if (section == "$Nodes") {
      have_nodes = true;
      if (v4) {
        const long long blocks = t.Integer("the number of node blocks");
        t.Integer("the number of nodes");
        t.Integer("the minimum node tag");
        t.Integer("the maximum node tag");
        for (long long bl = 0; bl < blocks; ++bl) {
          t.Integer("the entity dimension");
          t.Integer("the entity tag");
          const long long parametric = t.Integer("the parametric flag");
          const long long count = t.Integer("the number of nodes in the block");
          if (parametric) t.Fail("parametric node coordinates are not supported");
          std::vector<long long> tags(static_cast<std::size_t>(CheckedCount(t, count, "nodes")));
          for (auto& tag : tags) tag = t.Integer("a node tag");
          for (long long tag : tags) {
            const double x = t.Number("a coordinate"), y = t.Number("a coordinate"), z = t.Number("a coordinate");
            add_node(tag, x, y, z);
          }
        }
      } else {
        const Index count = CheckedCount(t, t.Integer("the number of nodes"), "nodes");
        for (Index i = 0; i < count; ++i) {
          const long long tag = t.Integer("a node number");
          const double x = t.Number("a coordinate"), y = t.Number("a coordinate"), z = t.Number("a coordinate");
          add_node(tag, x, y, z);
        }
      }
      t.Expect("$EndNodes");
    } else if (section == "$Elements") {
      have_elements = true;
      if (!have_nodes) t.Fail("$Elements before $Nodes");
      if (v4) {
        const long long blocks = t.Integer("the number of element blocks");
        t.Integer("the number of elements");
        t.Integer("the minimum element tag");
        t.Integer("the maximum element tag");
        for (long long bl = 0; bl < blocks; ++bl) {
          t.Integer("the entity dimension");
          t.Integer("the entity tag");
          const long long type = t.Integer("the element type");
          const long long count = t.Integer("the number of elements in the block");
          const int per = nodes_per_type(type);
          for (long long e = 0; e < count; ++e) {
            t.Integer("an element tag");
            for (int a = 0; a < per; ++a) {
              const Index node = node_of(t.Integer("a node tag"));
              if ((type == 4 || type == 11) && a < 4) r.mesh.tets.push_back(node);
            }
            if (type != 4 && type != 11) ++ignored[type];
          }
        }
      } else {
        const Index count = CheckedCount(t, t.Integer("the number of elements"), "elements");
        for (Index e = 0; e < count; ++e) {
          t.Integer("an element number");
          const long long type = t.Integer("the element type");
          const long long tags = t.Integer("the number of tags");
          for (long long k = 0; k < tags; ++k) t.Integer("a tag");
          const int per = nodes_per_type(type);
          for (int a = 0; a < per; ++a) {
            const Index node = node_of(t.Integer("a node number"));
            if ((type == 4 || type == 11) && a < 4) r.mesh.tets.push_back(node);
          }
          if (type != 4 && type != 11) ++ignored[type];
        }
      }
      t.Expect("$EndElements");
    } else if (!section.empty() && section[0] == '$') {
      // other sections ($PhysicalNames, $Entities, $NodeData, ...) are skipped
      t.SkipPast("$End" + section.substr(1));
    } else {
      t.Fail("unexpected '" + section + "' outside a section");
    }
  }
  if (!have_nodes || !have_elements) throw Error(path + ": no $Nodes or $Elements section");
  for (const auto& [type, count] : ignored) {
    r.notes.push_back(path + ": ignored " + std::to_string(count) + " non-tetrahedral element(s) of gmsh type " + std::to_string(type));
  }
  return r;
}

MeshReadResult ReadVtk(const std::string& path) {
  MeshReadResult r;
  const std::string text = ReadAll(path);
  // line 1: version, line 2: title (free text), line 3: ASCII/BINARY
  std::size_t p1 = text.find('\n'), p2 = p1 == std::string::npos ? p1 : text.find('\n', p1 + 1);
  if (p2 == std::string::npos || text.rfind("# vtk DataFile", 0) != 0) {
    throw Error(path + ":1: not a legacy VTK file (expected '# vtk DataFile Version ...')");
  }
  Tokens t(path, std::string(3, '\n') + text.substr(p2 + 1), false);
  const std::string format = t.Word("ASCII or BINARY");
  if (format != "ASCII") t.Fail("only ASCII legacy VTK files are read, found " + format);
  t.Expect("DATASET");
  const std::string dataset = t.Word("the dataset type");
  if (dataset != "UNSTRUCTURED_GRID") t.Fail("dataset must be UNSTRUCTURED_GRID, found " + dataset);
  t.Expect("POINTS");
  const Index n = CheckedCount(t, t.Integer("the number of points"), "points");
  t.Word("the point data type");
  r.mesh.x.resize(std::size_t(n) * 3);
  for (auto& c : r.mesh.x) c = t.Number("a coordinate");
  t.Expect("CELLS");
  const Index cells = CheckedCount(t, t.Integer("the number of cells"), "cells");
  t.Integer("the cell list size");
  std::vector<std::vector<Index>> conn(static_cast<std::size_t>(cells));
  for (auto& c : conn) {
    const long long k = t.Integer("a cell size");
    if (k < 1 || k > 1000) t.Fail("invalid cell size " + std::to_string(k));
    for (long long a = 0; a < k; ++a) {
      const long long id = t.Integer("a point index");
      if (id < 0 || id >= n) t.Fail("point index " + std::to_string(id) + " is out of range (0.." + std::to_string(n - 1) + ")");
      c.push_back(static_cast<Index>(id));
    }
  }
  t.Expect("CELL_TYPES");
  if (t.Integer("the number of cell types") != cells) t.Fail("CELL_TYPES count differs from CELLS");
  std::map<long long, long long> ignored;
  for (Index e = 0; e < cells; ++e) {
    const long long type = t.Integer("a cell type");
    // VTK_TETRA = 10, VTK_QUADRATIC_TETRA = 24
    if ((type == 10 && conn[e].size() == 4) || (type == 24 && conn[e].size() == 10)) {
      r.mesh.tets.insert(r.mesh.tets.end(), conn[e].begin(), conn[e].begin() + 4);
    } else {
      ++ignored[type];
    }
  }
  for (const auto& [type, count] : ignored) {
    r.notes.push_back(path + ": ignored " + std::to_string(count) + " non-tetrahedral cell(s) of VTK type " + std::to_string(type));
  }
  return r;
}

MeshReadResult ReadTetMesh(const std::string& path, const TetgenOptions& tetgen) {
  const std::string ext = Extension(path);
  MeshReadResult r;
  if (ext == "node" || ext == "ele") {
    const std::string base = path.substr(0, path.size() - ext.size());
    r = ReadTetgen(base + "node", base + "ele");
  } else if (ext == "msh") {
    r = ReadGmsh(path);
  } else if (ext == "vtk") {
    r = ReadVtk(path);
  } else if (ext == "stl" || ext == "obj" || ext == "off" || ext == "ply") {
    return [&] {
      MeshReadResult t = Tetrahedralize(ReadSurface(path), tetgen, path);
      for (const std::string& w : ValidateMesh(t.mesh, path)) t.notes.push_back(w);
      return t;
    }();
  } else {
    throw Error(path + ": unknown mesh extension '." + ext + "' (read: .node/.ele, .msh, .vtk, .stl, .obj, .off, .ply)");
  }
  FixOrientation(&r, path);
  for (const std::string& w : ValidateMesh(r.mesh, path)) r.notes.push_back(w);
  return r;
}

}  // namespace condsim
