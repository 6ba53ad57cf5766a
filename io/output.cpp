// HDF5 + XDMF run output.
#include "io/output.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "condsim/build_commit.h"
#include "condsim/build_info.h"
#include "condsim/error.h"
#include "models/fem/tet_mesh.h"

#if CONDSIM_HAVE_HDF5
#include <hdf5.h>
#endif

namespace condsim {

bool HaveHdf5() { return CONDSIM_HAVE_HDF5 != 0; }

namespace {
// a body name usable as an HDF5 group name
std::string GroupName(const std::string& name) {
  std::string g = name;
  for (char& c : g)
    if (c == '/' || c == '.') c = '_';
  return g.empty() ? "_" : g;
}
}  // namespace

Recorder::Recorder(const Scene& scene, const SceneWorld& world) : scene_name_(scene.name), scene_hash_(scene.hash) {
  for (std::size_t k = 0; k < scene.fem.size(); ++k) {
    Track t;
    t.name = scene.fem[k].name;
    t.kind = "fem";
    t.count = scene.fem[k].mesh.num_nodes();
    t.cells = scene.fem[k].mesh.tets;
    tracks_.push_back(std::move(t));
  }
  for (std::size_t k = 0; k < scene.rods.size(); ++k) {
    Track t;
    t.name = scene.rods[k].name;
    t.kind = "rod";
    t.count = static_cast<Index>(scene.rods[k].geometry.centers.size());
    tracks_.push_back(std::move(t));
  }
  // rigid bodies (the scene's, then each gripper's parts) with their contact shapes (for pictures)
  auto add_rigid = [&](const std::string& name, Index id) {
    Track t;
    t.name = name;
    t.kind = "rigid";
    t.count = 1;
    t.body = id;
    const RigidBody& b = world.world->rigid_body(id);
    t.shape = static_cast<Index>(b.shape);
    t.size = b.size;
    tracks_.push_back(std::move(t));
  };
  for (std::size_t k = 0; k < scene.rigid.size(); ++k) add_rigid(scene.rigid[k].name, world.rigid_ids[k]);
  for (std::size_t k = 0; k < scene.grippers.size(); ++k) {
    const Gripper& g = world.grippers[k];
    add_rigid(scene.grippers[k].name + "_palm", g.palm);
    add_rigid(scene.grippers[k].name + "_finger0", g.finger[0]);
    add_rigid(scene.grippers[k].name + "_finger1", g.finger[1]);
  }
  statics_ = scene.statics;
}

void Recorder::AddStats(const StepStats& s) {
  iterations_.push_back(s.cond.iterations);
  contacts_.push_back(s.contacts);
  residual_.push_back(Scalar(s.cond.residual));
  penetration_.push_back(s.max_penetration);
}

void Recorder::AddFrame(const SceneWorld& sw) {
  World& w = *sw.world;
  time_.push_back(w.time());
  std::size_t t = 0;
  for (std::size_t k = 0; k < sw.fem_ids.size(); ++k, ++t) {
    const std::vector<Scalar> x = w.FemPositions(sw.fem_ids[k]);
    tracks_[t].x.insert(tracks_[t].x.end(), x.begin(), x.end());
  }
  for (std::size_t k = 0; k < sw.rod_ids.size(); ++k, ++t) {
    const std::vector<Scalar> x = w.RodPositions(sw.rod_ids[k]);
    tracks_[t].x.insert(tracks_[t].x.end(), x.begin(), x.end());
    const std::vector<Scalar> q = w.rod_model(sw.rod_ids[k]).orientations().ToHost();
    tracks_[t].q.insert(tracks_[t].q.end(), q.begin(), q.end());
  }
  for (; t < tracks_.size(); ++t) {
    const RigidBody& b = w.rigid_body(tracks_[t].body);
    tracks_[t].x.insert(tracks_[t].x.end(), {b.x[0], b.x[1], b.x[2]});
    tracks_[t].q.insert(tracks_[t].q.end(), {b.q.w, b.q.x, b.q.y, b.q.z});
  }
  for (const ContactRecord& c : w.contacts()) {
    contact_position_.insert(contact_position_.end(), {c.position[0], c.position[1], c.position[2]});
    contact_normal_.insert(contact_normal_.end(), {c.normal[0], c.normal[1], c.normal[2]});
    contact_lambda_.insert(contact_lambda_.end(), {c.lambda[0], c.lambda[1], c.lambda[2]});
    contact_bodies_.insert(contact_bodies_.end(), {c.body_i, c.body_j});
  }
  contact_offset_.push_back(static_cast<Index>(contact_bodies_.size() / 2));
}

#if CONDSIM_HAVE_HDF5
namespace {

// a dataset of doubles / ints with the given dimensions, no timestamps (reproducible files)
void WriteData(hid_t loc, const std::string& name, hid_t type, const std::vector<hsize_t>& dims, const void* data,
               const std::string& file) {
  const hid_t space = H5Screate_simple(int(dims.size()), dims.data(), nullptr);
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_obj_track_times(dcpl, 0);
  const hid_t ds = H5Dcreate2(loc, name.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  herr_t rc = -1;
  if (ds >= 0) rc = H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
  if (ds >= 0) H5Dclose(ds);
  H5Pclose(dcpl);
  H5Sclose(space);
  if (ds < 0 || rc < 0) throw Error(file + ": cannot write dataset " + name);
}

hid_t MakeGroup(hid_t loc, const std::string& name) {
  const hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
  H5Pset_obj_track_times(gcpl, 0);
  const hid_t g = H5Gcreate2(loc, name.c_str(), H5P_DEFAULT, gcpl, H5P_DEFAULT);
  H5Pclose(gcpl);
  return g;
}

void WriteStringAttr(hid_t loc, const std::string& name, const std::string& value) {
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, value.size() + 1);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(loc, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, type, value.c_str());
  H5Aclose(a);
  H5Sclose(space);
  H5Tclose(type);
}

}  // namespace
#endif

void WriteTextAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".part";
  {
    std::ofstream out(tmp);
    if (!out) throw Error(path + ": cannot write " + tmp);
    out << text;
    if (!out) throw Error(path + ": cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

void Recorder::Write(const std::string& path) const {
#if CONDSIM_HAVE_HDF5
  const std::string tmp = path + ".part";
  const hsize_t frames = time_.size();
  const hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
  const hid_t file = H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
  H5Pclose(fcpl);
  if (file < 0) throw Error(path + ": cannot create the output file");
  const hid_t dbl = sizeof(Scalar) == 8 ? H5T_NATIVE_DOUBLE : H5T_NATIVE_FLOAT;
  WriteStringAttr(file, "scene", scene_name_);
  WriteStringAttr(file, "scene_hash", HashHex(scene_hash_));
  WriteStringAttr(file, "commit", CONDSIM_GIT_COMMIT);
  WriteData(file, "time", dbl, {frames}, time_.data(), path);
  const hid_t bodies = MakeGroup(file, "bodies");
  for (const Track& t : tracks_) {
    const hid_t g = MakeGroup(bodies, GroupName(t.name));
    WriteStringAttr(g, "kind", t.kind);
    WriteData(g, "x", dbl, {frames, hsize_t(t.count), 3}, t.x.data(), path);
    if (!t.q.empty()) WriteData(g, "q", dbl, {frames, hsize_t(t.count), 4}, t.q.data(), path);
    if (!t.cells.empty()) WriteData(g, "tets", H5T_NATIVE_INT32, {t.cells.size() / 4, 4}, t.cells.data(), path);
    if (t.shape >= 0) {
      // the contact shape in the body frame: type as /static/type, size as /static/size
      WriteData(g, "shape", H5T_NATIVE_INT32, {1}, &t.shape, path);
      const Scalar size[3] = {t.size[0], t.size[1], t.size[2]};
      WriteData(g, "size", dbl, {3}, size, path);
    }
    if (t.kind == "rod") {
      std::vector<Index> line(std::size_t(t.count));
      for (Index i = 0; i < t.count; ++i) line[i] = i;
      WriteData(g, "line", H5T_NATIVE_INT32, {hsize_t(t.count)}, line.data(), path);
    }
    H5Gclose(g);
  }
  H5Gclose(bodies);
  // the static shapes (for pictures): type (0 plane, 1 sphere, 2 box, 3 capsule), pose, size
  if (!statics_.empty()) {
    const hid_t st = MakeGroup(file, "static");
    std::vector<Index> type;
    std::vector<Scalar> centre, quat, size;
    for (const StaticShape& sh : statics_) {
      type.push_back(static_cast<Index>(sh.type));
      centre.insert(centre.end(), {sh.center[0], sh.center[1], sh.center[2]});
      quat.insert(quat.end(), {sh.orientation.w, sh.orientation.x, sh.orientation.y, sh.orientation.z});
      size.insert(size.end(), {sh.size[0], sh.size[1], sh.size[2]});
    }
    const hsize_t ns = statics_.size();
    WriteData(st, "type", H5T_NATIVE_INT32, {ns}, type.data(), path);
    WriteData(st, "center", dbl, {ns, 3}, centre.data(), path);
    WriteData(st, "quaternion", dbl, {ns, 4}, quat.data(), path);
    WriteData(st, "size", dbl, {ns, 3}, size.data(), path);
    H5Gclose(st);
  }
  const hid_t contacts = MakeGroup(file, "contacts");
  const hsize_t nc = contact_bodies_.size() / 2;
  WriteData(contacts, "offset", H5T_NATIVE_INT32, {contact_offset_.size()}, contact_offset_.data(), path);
  if (nc > 0) {
    WriteData(contacts, "position", dbl, {nc, 3}, contact_position_.data(), path);
    WriteData(contacts, "normal", dbl, {nc, 3}, contact_normal_.data(), path);
    WriteData(contacts, "impulse", dbl, {nc, 3}, contact_lambda_.data(), path);
    WriteData(contacts, "bodies", H5T_NATIVE_INT32, {nc, 2}, contact_bodies_.data(), path);
  }
  H5Gclose(contacts);
  const hid_t stats = MakeGroup(file, "stats");
  const hsize_t steps = iterations_.size();
  WriteData(stats, "iterations", H5T_NATIVE_INT32, {steps}, iterations_.data(), path);
  WriteData(stats, "contacts", H5T_NATIVE_INT32, {steps}, contacts_.data(), path);
  WriteData(stats, "residual", dbl, {steps}, residual_.data(), path);
  WriteData(stats, "max_penetration", dbl, {steps}, penetration_.data(), path);
  H5Gclose(stats);
  if (H5Fclose(file) < 0) throw Error(path + ": cannot close the output file");
  // the XDMF sidecar: a temporal collection of one grid per body and frame
  const std::string h5 = std::filesystem::path(path).filename().string();
  std::ostringstream x;
  x << "<?xml version=\"1.0\" ?>\n<Xdmf Version=\"3.0\">\n<Domain>\n<Grid Name=\"" << scene_name_
    << "\" GridType=\"Collection\" CollectionType=\"Temporal\">\n";
  for (hsize_t f = 0; f < frames; ++f) {
    x << "<Grid Name=\"frame " << f << "\" GridType=\"Collection\" CollectionType=\"Spatial\">\n<Time Value=\"" << time_[f]
      << "\"/>\n";
    for (const Track& t : tracks_) {
      const std::string g = "/bodies/" + GroupName(t.name);
      x << "<Grid Name=\"" << t.name << "\" GridType=\"Uniform\">\n";
      if (t.kind == "fem") {
        x << "<Topology TopologyType=\"Tetrahedron\" NumberOfElements=\"" << t.cells.size() / 4 << "\">\n<DataItem Dimensions=\""
          << t.cells.size() / 4 << " 4\" NumberType=\"Int\" Format=\"HDF\">" << h5 << ":" << g << "/tets</DataItem>\n</Topology>\n";
      } else if (t.kind == "rod") {
        x << "<Topology TopologyType=\"Polyline\" NodesPerElement=\"" << t.count << "\" NumberOfElements=\"1\">\n<DataItem Dimensions=\""
          << t.count << "\" NumberType=\"Int\" Format=\"HDF\">" << h5 << ":" << g << "/line</DataItem>\n</Topology>\n";
      } else {
        x << "<Topology TopologyType=\"Polyvertex\" NumberOfElements=\"1\"/>\n";
      }
      x << "<Geometry GeometryType=\"XYZ\">\n<DataItem ItemType=\"HyperSlab\" Dimensions=\"" << t.count
        << " 3\" Type=\"HyperSlab\">\n<DataItem Dimensions=\"3 3\" Format=\"XML\">" << f << " 0 0 1 1 1 1 " << t.count
        << " 3</DataItem>\n<DataItem Dimensions=\"" << frames << " " << t.count << " 3\" Format=\"HDF\" Precision=\"8\">" << h5 << ":"
        << g << "/x</DataItem>\n</DataItem>\n</Geometry>\n</Grid>\n";
    }
    x << "</Grid>\n";
  }
  x << "</Grid>\n</Domain>\n</Xdmf>\n";
  std::filesystem::path xmf(path);
  xmf.replace_extension(".xmf");
  std::filesystem::rename(tmp, path);
  WriteTextAtomically(xmf.string(), x.str());
#else
  (void)path;
  throw Error("output: condsim was built without HDF5 (install libhdf5-dev and reconfigure); summary.json is still written");
#endif
}

}  // namespace condsim
