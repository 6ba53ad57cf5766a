// Mesh readers. Every error names the file and, where it applies, the line.
#include "models/fem/mesh_io.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <unordered_map>

#include "condsim/build_info.h"
#include "condsim/error.h"

#if CONDSIM_HAVE_TETGEN
#define TETLIBRARY
#include <tetgen.h>
#endif

namespace condsim {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string Extension(const std::string& path) {
  const auto dot = path.find_last_of('.');
  const auto slash = path.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  return Lower(path.substr(dot + 1));
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open the file for reading");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// whitespace-separated tokens with their line numbers; '#' starts a comment when `comments`
class Tokens {
 public:
  Tokens(const std::string& path, const std::string& text, bool comments) : path_(path) {
    int line = 1;
    std::size_t i = 0;
    while (i < text.size()) {
      const char c = text[i];
      if (c == '\n') {
        ++line;
        ++i;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++i;
      } else if (comments && c == '#') {
        while (i < text.size() && text[i] != '\n') ++i;
      } else {
        std::size_t j = i;
        while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
        tokens_.push_back(text.substr(i, j - i));
        lines_.push_back(line);
        i = j;
      }
    }
  }
  bool Done() const { return pos_ >= tokens_.size(); }
  int Line() const { return pos_ < lines_.size() ? lines_[pos_] : (lines_.empty() ? 1 : lines_.back()); }
  [[noreturn]] void Fail(const std::string& what) const {
    throw Error(path_ + ":" + std::to_string(Line()) + ": " + what);
  }
  std::string Word(const char* what) {
    if (Done()) Fail(std::string("unexpected end of file, expected ") + what + " (truncated file?)");
    return tokens_[pos_++];
  }
  double Number(const char* what) {
    const std::string w = Word(what);
    char* end = nullptr;
    const double v = std::strtod(w.c_str(), &end);
    if (end == w.c_str() || *end != '\0' || !std::isfinite(v)) {
      --pos_;
      Fail(std::string("expected ") + what + ", found '" + w + "'");
    }
    return v;
  }
  long long Integer(const char* what) {
    const std::string w = Word(what);
    char* end = nullptr;
    const long long v = std::strtoll(w.c_str(), &end, 10);
    if (end == w.c_str() || *end != '\0') {
      --pos_;
      Fail(std::string("expected ") + what + " (an integer), found '" + w + "'");
    }
    return v;
  }
  void Expect(const std::string& word) {
    const std::string w = Word(word.c_str());
    if (w != word) {
      --pos_;
      Fail("expected '" + word + "', found '" + w + "'");
    }
  }
  // skips tokens up to and including `word`
  void SkipPast(const std::string& word) {
    while (!Done() && tokens_[pos_] != word) ++pos_;
    Word(word.c_str());
  }
  const std::string& Peek() const { return tokens_[pos_]; }

 private:
  std::string path_;
  std::vector<std::string> tokens_;
  std::vector<int> lines_;
  std::size_t pos_ = 0;
};

Index CheckedCount(Tokens& t, long long n, const char* what) {
  if (n < 0 || n > 2000000000LL) t.Fail(std::string("invalid number of ") + what + ": " + std::to_string(n));
  return static_cast<Index>(n);
}

// elements stored with a global convention of negative orientation are flipped (a file-level
// convention, not an error); mixed orientations are left for ValidateMesh to report
void FixOrientation(MeshReadResult* r, const std::string& source) {
  TetMesh& m = r->mesh;
  Index negative = 0;
  for (Index e = 0; e < m.num_tets(); ++e) negative += TetVolume(m, e) < 0;
  if (negative > 0 && negative == m.num_tets()) {
    for (Index e = 0; e < m.num_tets(); ++e) std::swap(m.tets[4 * std::size_t(e) + 2], m.tets[4 * std::size_t(e) + 3]);
    r->notes.push_back(source + ": all tetrahedra had negative orientation; flipped to positive");
  }
}

}  // namespace

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

SurfaceMesh ReadSurface(const std::string& path) {
  const std::string ext = Extension(path);
  const std::string text = ReadAll(path);
  SurfaceMesh s;
  if (ext == "stl") {
    const bool ascii = text.rfind("solid", 0) == 0 && text.find("facet") != std::string::npos;
    std::map<std::array<double, 3>, Index> vertex;
    auto add = [&](double x, double y, double z) {
      const std::array<double, 3> key{x, y, z};
      const auto it = vertex.find(key);
      if (it != vertex.end()) return it->second;
      const Index id = static_cast<Index>(vertex.size());
      vertex.emplace(key, id);
      s.x.insert(s.x.end(), {x, y, z});
      return id;
    };
    if (ascii) {
      Tokens t(path, text, false);
      while (!t.Done()) {
        const std::string w = t.Word("a keyword");
        if (w == "vertex") {
          const double x = t.Number("a coordinate"), y = t.Number("a coordinate"), z = t.Number("a coordinate");
          s.triangles.push_back(add(x, y, z));
        } else if (w == "endloop" && s.triangles.size() % 3 != 0) {
          t.Fail("a facet loop must have exactly 3 vertices");
        }
      }
    } else {
      if (text.size() < 84) throw Error(path + ": binary STL shorter than its 84-byte header (truncated file?)");
      std::uint32_t count = 0;
      std::memcpy(&count, text.data() + 80, 4);
      if (text.size() < 84 + std::size_t(count) * 50) {
        throw Error(path + ": binary STL declares " + std::to_string(count) + " triangles but holds " +
                    std::to_string((text.size() - 84) / 50) + " (truncated file?)");
      }
      for (std::uint32_t f = 0; f < count; ++f) {
        const char* p = text.data() + 84 + std::size_t(f) * 50 + 12;
        for (int v = 0; v < 3; ++v) {
          float c[3];
          std::memcpy(c, p + 12 * v, 12);
          s.triangles.push_back(add(c[0], c[1], c[2]));
        }
      }
    }
  } else if (ext == "obj") {
    std::istringstream in(text);
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      std::istringstream ls(line);
      std::string key;
      ls >> key;
      if (key == "v") {
        double x, y, z;
        if (!(ls >> x >> y >> z)) throw Error(path + ":" + std::to_string(number) + ": a vertex needs 3 coordinates");
        s.x.insert(s.x.end(), {x, y, z});
      } else if (key == "f") {
        std::vector<Index> face;
        std::string item;
        while (ls >> item) {
          const long long id = std::strtoll(item.c_str(), nullptr, 10);  // "i", "i/t", "i/t/n", "i//n"
          const long long nv = static_cast<long long>(s.x.size() / 3);
          const long long idx = id < 0 ? nv + id : id - 1;
          if (id == 0 || idx < 0 || idx >= nv) throw Error(path + ":" + std::to_string(number) + ": face index " + item + " is out of range");
          face.push_back(static_cast<Index>(idx));
        }
        if (face.size() < 3) throw Error(path + ":" + std::to_string(number) + ": a face needs at least 3 vertices");
        for (std::size_t k = 1; k + 1 < face.size(); ++k) s.triangles.insert(s.triangles.end(), {face[0], face[k], face[k + 1]});
      }
    }
  } else if (ext == "off" || ext == "ply") {
    Tokens t(path, text, ext == "off");
    Index nv = 0, nf = 0;
    if (ext == "off") {
      t.Expect("OFF");
      nv = CheckedCount(t, t.Integer("the number of vertices"), "vertices");
      nf = CheckedCount(t, t.Integer("the number of faces"), "faces");
      t.Integer("the number of edges");
    } else {
      t.Expect("ply");
      t.Expect("format");
      const std::string format = t.Word("the format");
      if (format != "ascii") t.Fail("only ASCII PLY files are read, found " + format);
      t.Word("the version");
      int vertex_props = 0;
      std::string element;
      while (true) {
        const std::string w = t.Word("a header line");
        if (w == "end_header") break;
        if (w == "element") {
          element = t.Word("an element name");
          const Index count = CheckedCount(t, t.Integer("an element count"), "elements");
          if (element == "vertex") nv = count;
          if (element == "face") nf = count;
        } else if (w == "property" && element == "vertex") {
          const std::string type = t.Word("a property type");
          if (type == "list") t.Fail("list properties on vertices are not supported");
          t.Word("a property name");
          ++vertex_props;
        }
      }
      if (vertex_props < 3) t.Fail("vertices need x, y, z properties");
      s.x.reserve(std::size_t(nv) * 3);
      for (Index v = 0; v < nv; ++v) {
        for (int p = 0; p < vertex_props; ++p) {
          const double value = t.Number("a vertex property");
          if (p < 3) s.x.push_back(value);
        }
      }
    }
    if (ext == "off") {
      for (Index v = 0; v < 3 * nv; ++v) s.x.push_back(t.Number("a coordinate"));
    }
    for (Index f = 0; f < nf; ++f) {
      const long long k = t.Integer("a face size");
      if (k < 3) t.Fail("a face needs at least 3 vertices");
      std::vector<Index> face;
      for (long long a = 0; a < k; ++a) {
        const long long id = t.Integer("a vertex index");
        if (id < 0 || id >= nv) t.Fail("vertex index " + std::to_string(id) + " is out of range");
        face.push_back(static_cast<Index>(id));
      }
      for (std::size_t q = 1; q + 1 < face.size(); ++q) s.triangles.insert(s.triangles.end(), {face[0], face[q], face[q + 1]});
    }
  } else {
    throw Error(path + ": unknown surface mesh extension '." + ext + "' (read: .stl, .obj, .off, .ply)");
  }
  if (s.triangles.empty()) throw Error(path + ": the surface has no triangles");
  return s;
}

MeshReadResult Tetrahedralize(const SurfaceMesh& surface, const TetgenOptions& options, const std::string& source) {
#if CONDSIM_HAVE_TETGEN
  CONDSIM_CHECK(options.max_volume >= 0 && std::isfinite(options.max_volume), source << ": tetgen max_volume must be >= 0");
  CONDSIM_CHECK(options.radius_edge_ratio >= 1.0, source << ": tetgen radius_edge_ratio must be >= 1");
  tetgenio in, out;
  in.firstnumber = 0;
  in.numberofpoints = static_cast<int>(surface.x.size() / 3);
  in.pointlist = new REAL[surface.x.size()];
  std::copy(surface.x.begin(), surface.x.end(), in.pointlist);
  in.numberoffacets = static_cast<int>(surface.triangles.size() / 3);
  in.facetlist = new tetgenio::facet[in.numberoffacets];
  for (int f = 0; f < in.numberoffacets; ++f) {
    tetgenio::facet& facet = in.facetlist[f];
    tetgenio::init(&facet);
    facet.numberofpolygons = 1;
    facet.polygonlist = new tetgenio::polygon[1];
    tetgenio::init(&facet.polygonlist[0]);
    facet.polygonlist[0].numberofvertices = 3;
    facet.polygonlist[0].vertexlist = new int[3];
    for (int v = 0; v < 3; ++v) facet.polygonlist[0].vertexlist[v] = surface.triangles[3 * std::size_t(f) + v];
  }
  // p: piecewise linear complex, q: quality, a: volume bound, Q: quiet
  std::ostringstream sw;
  sw << "pq" << options.radius_edge_ratio;
  if (options.max_volume > 0) sw << "a" << options.max_volume;
  sw << "Q";
  std::string switches = sw.str();
  try {
    tetrahedralize(&switches[0], &in, &out);
  } catch (...) {
    throw Error(source + ": TetGen could not tetrahedralize the surface (is it closed and free of self-intersections?)");
  }
  MeshReadResult r;
  r.mesh.x.assign(out.pointlist, out.pointlist + 3 * std::size_t(out.numberofpoints));
  r.mesh.tets.reserve(4 * std::size_t(out.numberoftetrahedra));
  for (int e = 0; e < out.numberoftetrahedra; ++e)
    for (int a = 0; a < 4; ++a) r.mesh.tets.push_back(out.tetrahedronlist[4 * std::size_t(e) + a] - out.firstnumber);
  r.notes.push_back(source + ": tetrahedralized by TetGen (" + switches + "): " + std::to_string(out.numberofpoints) +
                    " nodes, " + std::to_string(out.numberoftetrahedra) + " tetrahedra");
  FixOrientation(&r, source);
  return r;
#else
  (void)surface;
  (void)options;
  throw Error(source + ": surface meshes need TetGen, but condsim was built without it (install libtet1.5-dev and rebuild)");
#endif
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
