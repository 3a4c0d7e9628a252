#include "loopr-tool/job_facts.hpp"

#include <cstdlib>

namespace loopr::tool {
namespace {

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

}  // namespace

std::string job_lane() {
  return env_or_empty("LOOPR_LANE");
}

bool job_network_off() {
  const std::string network = env_or_empty("LOOPR_NETWORK");
  if (!network.empty()) return network == "off";
  return job_lane() == "no-net";
}

std::optional<std::size_t> job_max_output_bytes() {
  const std::string cap = env_or_empty("LOOPR_MAX_OUTPUT_BYTES");
  const long long value = std::atoll(cap.c_str());
  if (value > 0) return static_cast<std::size_t>(value);
  return std::nullopt;
}

}  // namespace loopr::tool
