#include "common/logging.h"

#include <mutex>

#include <spdlog/sinks/stdout_color_sinks.h>

namespace wattdb {

namespace {
std::mutex g_mu;  // guards logger creation and g_level
spdlog::level::level_enum g_level = spdlog::level::info;
std::string g_tag;
}  // namespace

std::shared_ptr<spdlog::logger> Log(const std::string& layer) {
  std::lock_guard<std::mutex> l(g_mu);
  auto lg = spdlog::get(layer);
  if (lg) return lg;
  lg = spdlog::stderr_color_mt(layer);
  lg->set_level(g_level);
  lg->set_pattern(fmt::format("%H:%M:%S.%e %^%L%$ {}[%n] %v", g_tag.empty() ? "" : g_tag + " "));
  return lg;
}

bool ConfigureLogging(const std::string& level, const std::string& process_tag) {
  auto lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off") return false;
  std::lock_guard<std::mutex> l(g_mu);
  g_level = lvl;
  g_tag = process_tag;
  spdlog::apply_all([&](std::shared_ptr<spdlog::logger> lg) {
    lg->set_level(lvl);
    lg->set_pattern(fmt::format("%H:%M:%S.%e %^%L%$ {}[%n] %v", g_tag.empty() ? "" : g_tag + " "));
  });
  return true;
}

}  // namespace wattdb
