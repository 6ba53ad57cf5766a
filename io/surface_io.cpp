// Surface mesh readers (.stl, .obj, .off, .ply) and their tetrahedralization with TetGen.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <unordered_map>

#include "condsim/build_info.h"
#include "condsim/error.h"
#include "condsim/math.h"
#include "io/mesh_io.h"
#include "io/mesh_text.h"

#if CONDSIM_HAVE_TETGEN
#define TETLIBRARY
#include <tetgen.h>
#endif

namespace condsim {

using mesh_text::CheckedCount;
using mesh_text::Extension;
using mesh_text::FixOrientation;
using mesh_text::ReadAll;
using mesh_text::Tokens;

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

void CheckClosedSurface(const SurfaceMesh& surface, const std::string& source) {
  const std::size_t nv = surface.x.size() / 3, nt = surface.triangles.size() / 3;
  CONDSIM_CHECK(nt >= 4, source << ": a closed surface needs at least 4 triangles, got " << nt);
  for (double c : surface.x) CONDSIM_CHECK(std::isfinite(c), source << ": a vertex coordinate is not finite");
  auto vertex = [&](Index i) {
    return Vec3(Scalar(surface.x[3 * std::size_t(i)]), Scalar(surface.x[3 * std::size_t(i) + 1]), Scalar(surface.x[3 * std::size_t(i) + 2]));
  };
  for (std::size_t t = 0; t < 3 * nt; ++t) {
    const Index a = surface.triangles[t];
    CONDSIM_CHECK(a >= 0 && std::size_t(a) < nv, source << ": triangle " << t / 3 << " names vertex " << a << " of " << nv);
  }
  // degenerate triangles: area below 1e-12 of the squared mean edge
  double edge_sum = 0;
  for (std::size_t t = 0; t < nt; ++t)
    for (int k = 0; k < 3; ++k) edge_sum += Norm(vertex(surface.triangles[3 * t + k]) - vertex(surface.triangles[3 * t + (k + 1) % 3]));
  const double h = edge_sum / double(3 * nt);
  double volume = 0;
  for (std::size_t t = 0; t < nt; ++t) {
    const Vec3 a = vertex(surface.triangles[3 * t]), b = vertex(surface.triangles[3 * t + 1]), c = vertex(surface.triangles[3 * t + 2]);
    const double area = 0.5 * Norm(Cross(b - a, c - a));
    CONDSIM_CHECK(area > 1e-12 * h * h, source << ": triangle " << t << " is degenerate (area " << area << " m^2)");
    volume += Dot(a, Cross(b, c)) / 6;
  }
  // closed and manifold: every edge in exactly two triangles, once in each direction
  std::map<std::pair<Index, Index>, int> directed;
  for (std::size_t t = 0; t < nt; ++t)
    for (int k = 0; k < 3; ++k) {
      const Index a = surface.triangles[3 * t + k], b = surface.triangles[3 * t + (k + 1) % 3];
      const std::pair<Index, Index> edge(a, b);
      CONDSIM_CHECK(++directed[edge] == 1, source << ": edge " << a << "-" << b << " is used twice in the same direction "
                                                    << "(triangle " << t << "): the surface is not manifold or not consistently oriented");
    }
  for (const auto& [edge, count] : directed)
    CONDSIM_CHECK(directed.count(std::make_pair(edge.second, edge.first)) == 1,
                  source << ": edge " << edge.first << "-" << edge.second << " belongs to one triangle only: the surface is not closed");
  CONDSIM_CHECK(std::fabs(volume) > 1e-12 * h * h * h, source << ": the surface encloses no volume (flat)");
}

MeshReadResult Tetrahedralize(const SurfaceMesh& surface, const TetgenOptions& options, const std::string& source) {
  CheckClosedSurface(surface, source);
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

}  // namespace condsim
