// Run output (io/output.h): an HDF5 file read back with the HDF5 C API has the shapes and values
// of the run's state (the reference: the world itself after the same steps), and two runs of the
// same scene on the same backend give bitwise-identical files. Skips without HDF5.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <cmath>
#include <string>

#include "condsim/build_info.h"
#include "io/output.h"
#include "io/scene.h"
#include "test_util.h"

#if CONDSIM_HAVE_HDF5
#include <hdf5.h>
#endif

namespace condsim {
namespace {

// runs box_sliding.json's first `steps` steps with a frame every `every` steps, writes `path`
SceneWorld RunAndWrite(const Scene& scene, Backend* backend, int steps, int every, const std::string& path) {
  SceneWorld sw = BuildWorld(scene, backend);
  Recorder rec(path, scene, sw);
  rec.AddFrame(sw);
  for (int k = 0; k < steps; ++k) {
    ApplyControls(scene, &sw);
    rec.AddStats(sw.world->Step());
    if ((k + 1) % every == 0) rec.AddFrame(sw);
  }
  rec.Finish("complete", "");
  return sw;
}

std::string Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(Output, Hdf5HoldsTheRunStateAndIsReproducible) {
  if (!HaveHdf5()) GTEST_SKIP() << "built without HDF5";
#if CONDSIM_HAVE_HDF5
  const Scene scene = LoadScene(std::string(CONDSIM_SOURCE_DIR) + "/scenes/box_sliding.json");
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  const std::string dir = std::filesystem::temp_directory_path().string() + "/condsim_output_test_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir + "/a");
  std::filesystem::create_directories(dir + "/b");
  const SceneWorld sw = RunAndWrite(scene, backend.get(), 20, 5, dir + "/a/out.h5");
  RunAndWrite(scene, backend.get(), 20, 5, dir + "/b/out.h5");
  ASSERT_TRUE(std::filesystem::exists(dir + "/a/out.h5"));
  ASSERT_TRUE(std::filesystem::exists(dir + "/a/out.xmf"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/a/out.h5.part"));
  // bitwise reproducible (no timestamps), sidecar included
  EXPECT_EQ(Bytes(dir + "/a/out.h5"), Bytes(dir + "/b/out.h5"));
  EXPECT_EQ(Bytes(dir + "/a/out.xmf"), Bytes(dir + "/b/out.xmf"));
  // read back: time (5 frames: t = 0 and every 5 steps), the box's positions, per-step stats
  const hid_t f = H5Fopen((dir + "/a/out.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  auto dims = [&](const char* name) {
    const hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    const hid_t s = H5Dget_space(d);
    std::vector<hsize_t> out(std::size_t(H5Sget_simple_extent_ndims(s)));
    H5Sget_simple_extent_dims(s, out.data(), nullptr);
    H5Sclose(s);
    H5Dclose(d);
    return out;
  };
  auto read = [&](const char* name, hid_t type, void* buf) {
    const hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    H5Dclose(d);
  };
  EXPECT_EQ(dims("/time"), (std::vector<hsize_t>{5}));
  EXPECT_EQ(dims("/bodies/box/x"), (std::vector<hsize_t>{5, 1, 3}));
  EXPECT_EQ(dims("/bodies/box/q"), (std::vector<hsize_t>{5, 1, 4}));
  EXPECT_EQ(dims("/bodies/box/v"), (std::vector<hsize_t>{5, 1, 3}));
  EXPECT_EQ(dims("/stats/iterations"), (std::vector<hsize_t>{20}));
  EXPECT_EQ(dims("/contacts/offset"), (std::vector<hsize_t>{6}));
  std::vector<double> time(5), x(15);
  read("/time", H5T_NATIVE_DOUBLE, time.data());
  read("/bodies/box/x", H5T_NATIVE_DOUBLE, x.data());
  EXPECT_DOUBLE_EQ(time[0], 0);
  EXPECT_NEAR(time[4], 0.2, 1e-12);
  const Vec3 last = sw.world->rigid_body(sw.rigid_ids[0]).x;
  for (int a = 0; a < 3; ++a) EXPECT_EQ(x[12 + a], last[a]);  // the world's final state, bit for bit
  std::vector<double> vel(15);
  read("/bodies/box/v", H5T_NATIVE_DOUBLE, vel.data());
  const Vec3 last_v = sw.world->rigid_body(sw.rigid_ids[0]).v;
  for (int a = 0; a < 3; ++a) EXPECT_EQ(vel[12 + a], last_v[a]);
  EXPECT_EQ(x[2], 0.1);                                       // frame 0: the initial pose
  std::vector<int> offset(6);
  read("/contacts/offset", H5T_NATIVE_INT32, offset.data());
  EXPECT_EQ(offset[5] - offset[4], static_cast<int>(sw.world->contacts().size()));  // 4 corners
  // the run's status
  const hid_t attr = H5Aopen(f, "status", H5P_DEFAULT);
  const hid_t type = H5Aget_type(attr);
  std::string status(H5Tget_size(type), '\0');
  H5Aread(attr, type, status.data());
  H5Tclose(type);
  H5Aclose(attr);
  EXPECT_STREQ(status.c_str(), "complete");
  H5Fclose(f);
  std::filesystem::remove_all(dir);
#endif
}

// an unfinished recorder (an error while writing) leaves no file; an interrupted one keeps its
// frames and renames its file
TEST(Output, UnfinishedRecorderLeavesNoFileAndInterruptedKeepsItsFrames) {
  if (!HaveHdf5()) GTEST_SKIP() << "built without HDF5";
  const Scene scene = LoadScene(std::string(CONDSIM_SOURCE_DIR) + "/scenes/box_sliding.json");
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  const std::string dir = std::filesystem::temp_directory_path().string() + "/condsim_output_test2_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  SceneWorld sw = BuildWorld(scene, backend.get());
  {
    Recorder rec(dir + "/a.h5", scene, sw);
    rec.AddFrame(sw);
    EXPECT_TRUE(std::filesystem::exists(dir + "/a.h5.part"));  // streamed while running
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/a.h5.part"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/a.h5"));
  Recorder rec(dir + "/b.h5", scene, sw);
  rec.AddFrame(sw);
  rec.AddStats(sw.world->Step());
  rec.AddFrame(sw);
  rec.Finish("interrupted", "stopped by SIGINT after step 1");
  EXPECT_EQ(rec.num_frames(), 2);
  EXPECT_TRUE(std::filesystem::exists(dir + "/b.h5"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/b.h5.part"));
  std::filesystem::remove_all(dir);
}

#if CONDSIM_HAVE_HDF5
// a dataset of `rows` x `cols` doubles from an HDF5 file (checks its shape)
std::vector<double> ReadRows(hid_t f, const std::string& name, hsize_t rows, hsize_t cols) {
  const hid_t d = H5Dopen2(f, name.c_str(), H5P_DEFAULT);
  EXPECT_GE(d, 0) << name;
  if (d < 0) return std::vector<double>(rows * cols, 0);
  const hid_t sp = H5Dget_space(d);
  std::vector<hsize_t> dims(std::size_t(H5Sget_simple_extent_ndims(sp)));
  H5Sget_simple_extent_dims(sp, dims.data(), nullptr);
  H5Sclose(sp);
  EXPECT_EQ(dims, cols == 1 ? std::vector<hsize_t>{rows} : (std::vector<hsize_t>{rows, cols})) << name;
  std::vector<double> out(rows * cols);
  H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data());
  H5Dclose(d);
  return out;
}
#endif

#if CONDSIM_HAVE_HDF5
// steps a scene 10 steps with the episode extras on (a frame every 5 steps) and checks each
// body's contact force and torque per frame against World::BodyWrench of the same frame, bit for
// bit (the reference: the world's own sums over its contact records); returns the file's path
// and the frame times, and the largest contact force component seen
std::string WriteExtras(const Scene& scene, const std::vector<std::string>& names, const std::string& dir,
                        std::vector<double>* times, double* largest) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  SceneWorld sw = BuildWorld(scene, backend.get());
  std::vector<Index> ids(sw.fem_ids);
  ids.insert(ids.end(), sw.rod_ids.begin(), sw.rod_ids.end());
  ids.insert(ids.end(), sw.rigid_ids.begin(), sw.rigid_ids.end());
  for (const Gripper& g : sw.grippers) ids.insert(ids.end(), {g.palm, g.finger[0], g.finger[1]});
  EXPECT_EQ(ids.size(), names.size());
  std::vector<std::vector<double>> force(ids.size()), torque(ids.size());
  const auto expect_frame = [&] {
    times->push_back(sw.world->time());
    for (std::size_t k = 0; k < ids.size(); ++k) {
      const Wrench w = sw.world->BodyWrench(ids[k]);
      for (int a = 0; a < 3; ++a) {
        force[k].push_back(w.force[a]);
        torque[k].push_back(w.torque[a]);
      }
    }
  };
  RecordEpisode episode;
  episode.extras = true;
  const std::string path = dir + "/" + scene.name + ".h5";
  {
    Recorder rec(path, scene, sw, episode);
    rec.AddFrame(sw);
    expect_frame();
    for (int k = 0; k < 10; ++k) {
      ApplyControls(scene, &sw);
      rec.AddStats(sw.world->Step());
      if ((k + 1) % 5 == 0) {
        rec.AddFrame(sw);
        expect_frame();
      }
    }
    rec.Finish("complete", "");
  }
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(f, 0);
  *largest = 0;
  for (std::size_t k = 0; k < ids.size(); ++k) {
    EXPECT_EQ(ReadRows(f, "/bodies/" + names[k] + "/contact_force", 3, 3), force[k]) << scene.name << " " << names[k];
    EXPECT_EQ(ReadRows(f, "/bodies/" + names[k] + "/contact_torque", 3, 3), torque[k]) << scene.name << " " << names[k];
    for (double v : force[k]) *largest = std::max(*largest, std::abs(v));
  }
  H5Fclose(f);
  return path;
}
#endif

// a batch episode's extras (RecordEpisode::extras): per frame each body's contact wrench equals
// World::BodyWrench bit for bit on box_sliding (a rigid box on 4 corner contacts: its torque is
// about its centre of mass) and soft_ball_gripping (an FEM ball on the floor in a gripper), and
// the gripper's width target is the linear interpolation of its waypoints (0.11 m at t = 0 to
// 0.06 m at t = 0.6 s; to 1e-15 m) with the palm target at its first waypoint (0, 0, 0.1) until
// t = 0.7 s (to 1e-15 m)
TEST(Output, EpisodeExtrasHoldBodyWrenchesAndDriveTargets) {
  if (!HaveHdf5()) GTEST_SKIP() << "built without HDF5";
#if CONDSIM_HAVE_HDF5
  const std::string dir = std::filesystem::temp_directory_path().string() + "/condsim_output_test4_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::vector<double> times;
  double largest = 0;
  WriteExtras(LoadScene(std::string(CONDSIM_SOURCE_DIR) + "/scenes/box_sliding.json"), {"box"}, dir, &times, &largest);
  EXPECT_GT(largest, 1.0);  // the box's weight, 4.9 N (a zero wrench would test nothing)
  times.clear();
  const std::string path = WriteExtras(LoadScene(std::string(CONDSIM_SOURCE_DIR) + "/scenes/soft_ball_gripping.json"),
                                       {"ball", "gripper_palm", "gripper_finger0", "gripper_finger1"}, dir, &times, &largest);
  EXPECT_GT(largest, 0.1);  // the ball rests on the floor
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const std::vector<double> width = ReadRows(f, "/drives/gripper/gripper/width", 3, 1);
  const std::vector<double> palm = ReadRows(f, "/drives/gripper/gripper/position", 3, 3);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(width[i], 0.11 + (0.06 - 0.11) * times[i] / 0.6, 1e-15) << "frame " << i;
    EXPECT_NEAR(palm[3 * i + 2], 0.1, 1e-15) << "frame " << i;
  }
  H5Fclose(f);
  std::filesystem::remove_all(dir);
#endif
}

// a free rigid box (tumbling about a non-principal axis), a free FEM slab and a free cable
// (moving and spinning), with `gravity`; tight solver thresholds so the laws below hold to 1e-9
std::string FreeBodies(const std::string& gravity) {
  return R"({"name": "free", "world": {"gravity": )" + gravity + R"(, "dt": 0.01},
    "solver": {"theta_threshold": 1e-12, "max_iterations": 20000},
    "rigid_bodies": [{"name": "box", "shape": "box", "half_extents": [0.1, 0.05, 0.02], "mass": 2, "position": [1, 0, 0],
                      "velocity": [0.3, -0.1, 0.2], "angular_velocity": [0.5, 1, 2]}],
    "fem_bodies": [{"name": "slab", "mesh": {"generator": "box", "origin": [0, 1, 0], "size": [0.04, 0.02, 0.01], "cells": [4, 2, 1]},
                    "material": {"young": 1e6, "poisson": 0.3, "density": 1000}, "velocity": [0.1, 0.2, -0.1]}],
    "rods": [{"name": "cable", "points": [[0, -1, 0], [0.3, -1, 0.1]], "segments": 8,
              "material": {"radius": 0.004, "young": 1e6, "density": 1000, "geometric_stiffness": false},
              "velocity": [0.1, 0, 0.05], "angular_velocity": [0, 0, 1]}]})";
}

// /stats/bodies/<name>/{kinetic_energy, momentum, angular_momentum}: one row per step, at the
// step's end. References: with no gravity and no contact, momentum is conserved for every body
// and angular momentum about the origin for the rigid body (the midpoint rule with the world
// inertia conserves it exactly, models/rigid/rigid_model.h) and the translating FEM slab (no
// internal force: x × m v is constant), to 1e-9 relative; under gravity the momentum grows by
// m g t per step (the midpoint rule's v_{k+1} = v_k + g t without other forces), 1e-9 relative of
// m g t. The last rows equal World::BodyMomenta after the run (bit for bit)
TEST(Output, BodyMomentaPerStep) {
  if (!HaveHdf5()) GTEST_SKIP() << "built without HDF5";
#if CONDSIM_HAVE_HDF5
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  const std::string dir = std::filesystem::temp_directory_path().string() + "/condsim_output_test3_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const int steps = 20;
  const Scalar dt = 0.01, r = 0.004;
  const Scalar mass[3] = {2, 1000 * 0.04 * 0.02 * 0.01, 1000 * 3.14159265358979323846 * r * r * std::sqrt(0.3 * 0.3 + 0.1 * 0.1)};
  const char* names[3] = {"box", "slab", "cable"};
  for (const bool gravity : {false, true}) {
    const Vec3 g = gravity ? Vec3(0, 0, -9.81) : Vec3();
    const Scene scene = ParseScene(FreeBodies(gravity ? "[0, 0, -9.81]" : "[0, 0, 0]"), "free.json", "");
    const std::string path = dir + (gravity ? "/g.h5" : "/free.h5");
    SceneWorld sw = RunAndWrite(scene, backend.get(), steps, 10, path);
    const std::vector<BodyMomentum> last = sw.world->BodyMomenta();
    const Index ids[3] = {sw.rigid_ids[0], sw.fem_ids[0], sw.rod_ids[0]};
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    for (int b = 0; b < 3; ++b) {
      const std::string group = std::string("/stats/bodies/") + names[b];
      const std::vector<double> e = ReadRows(f, group + "/kinetic_energy", steps, 1);
      const std::vector<double> p = ReadRows(f, group + "/momentum", steps, 3);
      const std::vector<double> l = ReadRows(f, group + "/angular_momentum", steps, 3);
      EXPECT_EQ(e[steps - 1], last[ids[b]].kinetic_energy) << names[b];
      for (int a = 0; a < 3; ++a) {
        EXPECT_EQ(p[3 * (steps - 1) + a], last[ids[b]].linear[a]) << names[b];
        EXPECT_EQ(l[3 * (steps - 1) + a], last[ids[b]].angular[a]) << names[b];
      }
      const Vec3 p0(p[0], p[1], p[2]);
      ASSERT_GT(Norm(p0), 0) << names[b];
      for (int k = 1; k < steps; ++k) {
        const Vec3 dp = Vec3(p[3 * k], p[3 * k + 1], p[3 * k + 2]) - Vec3(p[3 * k - 3], p[3 * k - 2], p[3 * k - 1]);
        const Vec3 want = (mass[b] * dt) * g;
        for (int a = 0; a < 3; ++a)
          ASSERT_NEAR(dp[a], want[a], 1e-9 * (gravity ? Norm(want) : Norm(p0))) << names[b] << " step " << k << " axis " << a;
        if (gravity || b == 2) continue;
        const Vec3 l0(l[0], l[1], l[2]);
        for (int a = 0; a < 3; ++a) ASSERT_NEAR(l[3 * k + a], l0[a], 1e-9 * Norm(l0)) << names[b] << " step " << k << " axis " << a;
      }
    }
    H5Fclose(f);
  }
  std::filesystem::remove_all(dir);
#endif
}

// XML special characters in names (XDMF sidecar) and HDF5 group names made unique
TEST(Output, NamesAreEscapedAndUnique) {
  EXPECT_EQ(EscapeXml("a&b <c> \"d\" 'e'"), "a&amp;b &lt;c&gt; &quot;d&quot; &apos;e&apos;");
  EXPECT_EQ(UniqueGroupNames({"a/b", "a.b", "a_b", "", "c"}), (std::vector<std::string>{"a_b", "a_b_2", "a_b_3", "_", "c"}));
}

}  // namespace
}  // namespace condsim
