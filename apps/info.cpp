// `condsim info`: version, build configuration and backend availability.
#include <omp.h>

#include <iomanip>
#include <iostream>

#include "apps/args.h"
#include "condsim/backend.h"
#include "condsim/build_info.h"

namespace condsim::app {

int RunInfo(const std::vector<std::string>& argv) {
  const Args args(argv, {"--device"}, {}, "info");
  const int device = static_cast<int>(args.GetInt("--device", 0, 0, 1024));
  std::cout << "condsim " << CONDSIM_VERSION_STRING << "\n"
            << "build:\n"
            << "  type            " << CONDSIM_BUILD_TYPE << "\n"
            << "  compiler        " << CONDSIM_CXX_COMPILER << "\n"
            << "  Scalar          " << (sizeof(Scalar) == 8 ? "double" : "float") << "\n"
            << "  Index           int32\n"
            << "  OpenMP threads  " << omp_get_max_threads() << " (max; OMP_NUM_THREADS to change)\n"
            << "  Eigen           " << CONDSIM_EIGEN_VERSION << "\n"
            << "  HDF5            "
            << (CONDSIM_HAVE_HDF5 ? std::string("found ") + CONDSIM_HDF5_VERSION
                                  : std::string("not found (HDF5 output disabled)"))
            << "\n"
            << "  TetGen          "
            << (CONDSIM_HAVE_TETGEN ? "found" : "not found (surface-mesh tetrahedralization disabled)")
            << "\n";
  const CudaProbe probe = ProbeCuda(device);
  std::cout << "  CUDA backend    "
            << (probe.compiled ? std::string("compiled (") + CONDSIM_CUDA_COMPILER +
                                     ", architectures " + CONDSIM_CUDA_ARCHITECTURES + ")"
                               : std::string("not compiled"))
            << "\n"
            << "backends:\n"
            << "  cpu   usable: OpenMP, " << omp_get_max_threads() << " threads, "
            << omp_get_num_procs() << " processors\n";
  if (probe.usable) {
    std::cout << "  cuda  usable: device " << device << " " << probe.device_name << ", "
              << std::fixed << std::setprecision(1)
              << double(probe.total_memory) / (1024.0 * 1024.0 * 1024.0) << " GiB, sm_"
              << probe.compute_major << probe.compute_minor << ", " << probe.device_count
              << " device(s), runtime " << probe.runtime_version << ", driver "
              << probe.driver_version << "\n";
  } else {
    std::cout << "  cuda  not usable: " << probe.reason << "\n";
  }
  const BackendSelection sel = MakeBackend(BackendChoice::kAuto);
  std::cout << "auto backend: " << sel.backend->Describe() << " (" << sel.reason << ")\n";
  return 0;
}

}  // namespace condsim::app
