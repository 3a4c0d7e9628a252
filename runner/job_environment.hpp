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

// "NAME=value" entries: fixed defaults (PATH, HOME=/tmp, TMPDIR, LANG, TERM)
// overlaid with the allowlisted entries of `requested`, plus what the runner
// tells loopr-tool itself: LOOPR_LANE and LOOPR_MAX_OUTPUT_BYTES.
std::vector<std::string> job_environment(const std::map<std::string, std::string>& requested,
                                         const std::string& lane, std::int64_t max_output_bytes);

}  // namespace loopr::runner
