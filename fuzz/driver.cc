// A main() for the fuzz targets when they are not built with libFuzzer (the regular build
// and ctest): runs every file of the seed corpus, then `iterations` inputs made by random
// mutations of them (byte flips, inserts, deletes, repeats, splices), from a fixed seed so
// a failure can be replayed. A crash or an abort fails the run.
//   usage: <target> <corpus dir> [iterations] [seed]
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::string Mutate(std::string s, const std::vector<std::string>& corpus, std::mt19937_64& rng) {
  int edits = 1 + rng() % 8;
  for (int e = 0; e < edits; e++) {
    size_t pos = s.empty() ? 0 : rng() % s.size();
    switch (rng() % 6) {
      case 0:
        if (!s.empty()) s[pos] = static_cast<char>(s[pos] ^ (1 << (rng() % 8)));
        break;
      case 1:
        s.insert(s.begin() + static_cast<long>(pos), static_cast<char>(rng() % 256));
        break;
      case 2:
        if (!s.empty()) s.erase(pos, 1 + rng() % std::min<size_t>(16, s.size() - pos));
        break;
      case 3:  // repeat a chunk (deep nesting, long lists)
        if (!s.empty()) {
          size_t n = 1 + rng() % std::min<size_t>(8, s.size() - pos);
          std::string chunk = s.substr(pos, n);
          int times = 1 + rng() % 64;
          std::string rep;
          for (int i = 0; i < times; i++) rep += chunk;
          s.insert(pos, rep);
        }
        break;
      case 4: {  // splice another input
        const std::string& o = corpus[rng() % corpus.size()];
        if (!o.empty()) s.insert(pos, o.substr(rng() % o.size()));
        break;
      }
      default:
        if (!s.empty()) s[pos] = "\0\x01\x7f\x80\xff()'\"\\;,\n"[rng() % 13];
        break;
    }
  }
  if (s.size() > 65536) s.resize(65536);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help") {
    std::cout << "usage: " << argv[0] << " <corpus dir> [iterations] [seed]\n"
              << "Runs the seed corpus, then random mutations of it, through the fuzz target.\n";
    return argc < 2 ? 2 : 0;
  }
  long iterations = argc > 2 ? std::stol(argv[2]) : 10000;
  uint64_t seed = argc > 3 ? std::stoull(argv[3]) : 1;
  std::vector<std::string> corpus;
  for (const auto& e : std::filesystem::directory_iterator(argv[1])) {
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    corpus.push_back(ss.str());
  }
  if (corpus.empty()) corpus.push_back("");
  for (const auto& c : corpus)
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(c.data()), c.size());
  std::mt19937_64 rng(seed);
  for (long i = 0; i < iterations; i++) {
    std::string in = Mutate(corpus[rng() % corpus.size()], corpus, rng);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(in.data()), in.size());
  }
  std::cout << (corpus.size() + iterations) << " inputs, 0 crashes (seed " << seed << ")\n";
  return 0;
}
