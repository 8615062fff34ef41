// One spdlog logger per layer. Messages are facts with key=value pairs.
#pragma once

#include <memory>
#include <string>

#include <spdlog/spdlog.h>

namespace wattdb {

// Returns the logger named `layer` ("master", "node", "storage", "net", "power", "query"),
// creating it on first use. Thread-safe.
std::shared_ptr<spdlog::logger> Log(const std::string& layer);

// Sets the level of every logger ("trace".."off") and an optional process tag printed in
// each line (e.g. "n2"). Returns false on an unknown level name.
bool ConfigureLogging(const std::string& level, const std::string& process_tag);

}  // namespace wattdb
