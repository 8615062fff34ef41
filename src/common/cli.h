// Command-line parsing shared by the binaries (Boost.Program_options; header-only, so only the
// binaries that use it link the library).
#pragma once

#include <iostream>
#include <optional>

#include <boost/program_options.hpp>

namespace wattdb {

// Parses argv against `desc` into *vm. Returns the exit status when the program should stop
// at once: 0 after printing the usage for --help, 2 after an error and the usage for bad
// flags; nullopt to go on.
inline std::optional<int> ParseCommandLine(const char* prog, int argc, char** argv,
                                           const boost::program_options::options_description& desc,
                                           boost::program_options::variables_map* vm) {
  namespace po = boost::program_options;
  try {
    po::store(po::parse_command_line(argc, argv, desc), *vm);
    po::notify(*vm);
  } catch (const po::error& e) {
    std::cerr << prog << ": " << e.what() << "\n" << desc << "\n";
    return 2;
  }
  if (vm->count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  return std::nullopt;
}

}  // namespace wattdb
