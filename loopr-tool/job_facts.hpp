// What the runner tells a tool process about its job through the environment
// (runner/job_environment.cpp sets these): the lane, whether it has network,
// and the job's output cap. Outside a runner (tests, a manual run) they are
// unset and the defaults below apply. Reads the environment on each call;
// thread-safe as long as nobody calls setenv.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace loopr::tool {

// LOOPR_LANE; empty outside a runner.
std::string job_lane();

// LOOPR_NETWORK=off, or, when it is unset, the lane is no-net.
bool job_network_off();

// LOOPR_MAX_OUTPUT_BYTES when it is a positive number; nullopt otherwise.
std::optional<std::size_t> job_max_output_bytes();

}  // namespace loopr::tool
