// Run output (io/output.h): an HDF5 file read back with the HDF5 C API has the shapes and values
// of the run's state (the reference: the world itself after the same steps), and two runs of the
// same scene on the same backend give bitwise-identical files. Skips without HDF5.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
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

// XML special characters in names (XDMF sidecar) and HDF5 group names made unique
TEST(Output, NamesAreEscapedAndUnique) {
  EXPECT_EQ(EscapeXml("a&b <c> \"d\" 'e'"), "a&amp;b &lt;c&gt; &quot;d&quot; &apos;e&apos;");
  EXPECT_EQ(UniqueGroupNames({"a/b", "a.b", "a_b", "", "c"}), (std::vector<std::string>{"a_b", "a_b_2", "a_b_3", "_", "c"}));
}

}  // namespace
}  // namespace condsim
