// Text helpers shared by the mesh readers (io/mesh_io.cpp, io/surface_io.cpp): whole-file reads,
// extensions, and whitespace tokens that know their line, so every error names file and line.
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "condsim/error.h"
#include "io/mesh_io.h"

namespace condsim {
namespace mesh_text {

inline std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

inline std::string Extension(const std::string& path) {
  const auto dot = path.find_last_of('.');
  const auto slash = path.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  return Lower(path.substr(dot + 1));
}

inline std::string ReadAll(const std::string& path) {
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

inline Index CheckedCount(Tokens& t, long long n, const char* what) {
  if (n < 0 || n > 2000000000LL) t.Fail(std::string("invalid number of ") + what + ": " + std::to_string(n));
  return static_cast<Index>(n);
}

// elements stored with a global convention of negative orientation are flipped (a file-level
// convention, not an error); mixed orientations are left for ValidateMesh to report
inline void FixOrientation(MeshReadResult* r, const std::string& source) {
  TetMesh& m = r->mesh;
  Index negative = 0;
  for (Index e = 0; e < m.num_tets(); ++e) negative += TetVolume(m, e) < 0;
  if (negative > 0 && negative == m.num_tets()) {
    for (Index e = 0; e < m.num_tets(); ++e) std::swap(m.tets[4 * std::size_t(e) + 2], m.tets[4 * std::size_t(e) + 3]);
    r->notes.push_back(source + ": all tetrahedra had negative orientation; flipped to positive");
  }
}

}  // namespace mesh_text
}  // namespace condsim
