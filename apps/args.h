// A small command-line parser for the condsim subcommands: --key value pairs and --flags,
// unknown keys rejected with a message naming them.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "condsim/error.h"

namespace condsim::app {

class Args {
 public:
  // value_keys take one value, flag_keys none; positional arguments are kept in order
  Args(const std::vector<std::string>& argv, const std::set<std::string>& value_keys,
       const std::set<std::string>& flag_keys, const std::string& command) {
    for (std::size_t i = 0; i < argv.size(); ++i) {
      const std::string& a = argv[i];
      if (a.rfind("--", 0) != 0) {
        positional_.push_back(a);
      } else if (flag_keys.count(a)) {
        flags_.insert(a);
      } else if (value_keys.count(a)) {
        if (i + 1 >= argv.size()) throw Error(command + ": option " + a + " needs a value");
        values_[a] = argv[++i];
      } else {
        std::string valid;
        for (const auto& k : value_keys) valid += " " + k;
        for (const auto& k : flag_keys) valid += " " + k;
        throw Error(command + ": unknown option '" + a + "' (valid:" + valid + ")");
      }
    }
  }

  bool Flag(const std::string& key) const { return flags_.count(key) > 0; }
  bool Has(const std::string& key) const { return values_.count(key) > 0; }
  std::string Get(const std::string& key, const std::string& fallback) const {
    const auto it = values_.find(key);
    return it == values_.end() ? fallback : it->second;
  }
  // integer option, checked against [lo, hi]; accepts 1e6-style values
  long long GetInt(const std::string& key, long long fallback, long long lo, long long hi) const {
    const auto it = values_.find(key);
    if (it == values_.end()) return fallback;
    double v = 0;
    std::size_t used = 0;
    try {
      v = std::stod(it->second, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != it->second.size() || v != static_cast<double>(static_cast<long long>(v)) ||
        v < double(lo) || v > double(hi)) {
      throw Error("option " + key + ": '" + it->second + "' is not an integer in [" +
                  std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return static_cast<long long>(v);
  }
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> flags_;
  std::vector<std::string> positional_;
};

int RunInfo(const std::vector<std::string>& args);
int RunBench(const std::vector<std::string>& args);
int RunScene(const std::vector<std::string>& args);

}  // namespace condsim::app
