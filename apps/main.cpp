// condsim: the command-line entry point (info, run, batch, bench).
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "apps/args.h"
#include "condsim/build_info.h"

namespace {

void PrintUsage(std::ostream& out) {
  out << "usage: condsim <command> [options]\n"
         "commands:\n"
         "  info                      version, build configuration, backends and why they are (not) usable\n"
         "  run SCENE.json [options]  step a scene file (see `condsim run --help`; no scene: a built-in check)\n"
         "  batch SCENE.json [options] randomized episodes of a scene, many at a time (see `condsim batch --help`)\n"
         "  bench NAME [options]      benchmarks: spmv, vector, solver, fem, rod, detect, modes, batch, scale (see `condsim bench --help`)\n"
         "  --version                 print the version\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    PrintUsage(args.empty() ? std::cerr : std::cout);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version") {
    std::cout << "condsim " << CONDSIM_VERSION_STRING << "\n";
    return 0;
  }
  const std::string command = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (command == "info") return condsim::app::RunInfo(rest);
    if (command == "run") return condsim::app::RunScene(rest);
    if (command == "batch") return condsim::app::RunBatch(rest);
    if (command == "bench") return condsim::app::RunBench(rest);
    std::cerr << "condsim: unknown command '" << command << "'\n";
    PrintUsage(std::cerr);
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "condsim " << command << ": error: " << e.what() << "\n";
    return 1;
  }
}
