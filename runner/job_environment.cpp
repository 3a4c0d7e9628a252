#include "runner/job_environment.hpp"

#include <array>
#include <string_view>

namespace loopr::runner {
namespace {

constexpr std::array<std::string_view, 12> kAllowedNames = {
    "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM",      "TZ",
    "CC",   "CXX",  "CFLAGS", "CXXFLAGS", "MAKEFLAGS", "NO_COLOR"};

}  // namespace

bool job_may_receive(const std::string& name) {
  for (std::string_view allowed : kAllowedNames) {
    if (name == allowed) return true;
  }
  return false;
}

std::vector<std::string> job_environment(const std::map<std::string, std::string>& requested,
                                         const LaneFacts& facts) {
  std::map<std::string, std::string> env = {
      {"PATH", "/usr/local/bin:/usr/bin:/bin"},
      {"HOME", "/tmp"},
      {"TMPDIR", "/tmp"},
      {"LANG", "C.UTF-8"},
      {"TERM", "dumb"},
  };
  for (const auto& [name, value] : requested) {
    if (job_may_receive(name) && name.find('=') == std::string::npos &&
        value.find('\0') == std::string::npos) {
      env[name] = value;
    }
  }
  env["LOOPR_LANE"] = facts.lane;
  env["LOOPR_NETWORK"] = facts.network ? "on" : "off";
  env["LOOPR_MAX_OUTPUT_BYTES"] = std::to_string(facts.max_output_bytes);
  if (facts.stream_output) env["LOOPR_STREAM_OUTPUT"] = "1";
  if (facts.address_space_mb != 0)
    env["LOOPR_ADDRESS_SPACE_MB"] = std::to_string(facts.address_space_mb);
  if (facts.job_init) env["LOOPR_JOB_INIT"] = "1";
  if (!facts.apt_config.empty()) env["APT_CONFIG"] = facts.apt_config;
  if (!facts.proxy_url.empty()) {
    for (const char* name :
         {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
          "npm_config_proxy", "npm_config_https_proxy", "LOOPR_EGRESS_PROXY"}) {
      env[name] = facts.proxy_url;
    }
    // The lane's own loopback stays direct (a test server a build starts).
    env["NO_PROXY"] = env["no_proxy"] = "localhost,127.0.0.1,::1";
    // git over ssh: the tunnel through CONNECT (OpenBSD netcat, -X connect).
    env["GIT_SSH_COMMAND"] =
        "ssh -o ProxyCommand='nc -X connect -x 127.0.0.1:" + std::to_string(facts.proxy_port) +
        " %h %p'";
  }
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [name, value] : env)
    out.push_back(name + "=" + value);
  return out;
}

}  // namespace loopr::runner
