// The environment a job sees: built from an allowlist, never inherited. API
// keys and the daemon's own variables (LOOPR_*, XDG_RUNTIME_DIR, DBUS_*,
// SSH_AUTH_SOCK...) never reach a job.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace loopr::runner {

// Names a job may receive from the job request's env. Everything else in the
// request is dropped.
bool job_may_receive(const std::string& name);

// What the runner itself tells loopr-tool about the lane and the job.
struct LaneFacts {
  std::string lane;            // LOOPR_LANE
  bool network = false;        // LOOPR_NETWORK=on|off
  bool stream_output = false;  // LOOPR_STREAM_OUTPUT=1 (heavy lane)
  bool job_init = false;       // LOOPR_JOB_INIT=1: loopr-tool is the job's PID 1
  // APT_CONFIG: the jobs' apt settings (lane_filesystem.hpp kJobAptConfig),
  // in the lane's /dev; empty: none (the sandbox is off).
  std::string apt_config = {};
  std::int64_t max_output_bytes = 0;   // LOOPR_MAX_OUTPUT_BYTES
  std::uint64_t address_space_mb = 0;  // LOOPR_ADDRESS_SPACE_MB (0: none); resource_limits.hpp
  // The lane's egress proxy (egress_listener.hpp); empty: none. Sets the
  // proxy variables curl, git, pip, npm, apt, cargo and go read, and
  // LOOPR_EGRESS_PROXY for loopr-fetch.
  std::string proxy_url = {};
  std::uint16_t proxy_port = 0;  // for git over ssh's ProxyCommand
};

// "NAME=value" entries: fixed defaults (PATH, HOME=/tmp, TMPDIR, LANG, TERM)
// overlaid with the allowlisted entries of `requested`, plus the runner's own
// LOOPR_* variables from `facts`, which a request cannot override.
std::vector<std::string> job_environment(const std::map<std::string, std::string>& requested,
                                         const LaneFacts& facts);

}  // namespace loopr::runner
