// rlimits for a job's processes. Memory and process counts would better be
// cgroup limits; this machine class delegates no cgroup v2 controllers, so
// RLIMIT_AS and RLIMIT_NPROC stand in, and the runner reports that in its
// handshake (cgroup limits are optional, their absence is reported).
//
// Contract: called in the job's process before exec; the limits are
// inherited by everything the job starts.
#pragma once

#include <cstdint>

#include "common/error.hpp"

namespace loopr::runner {

struct JobLimits {
  std::uint64_t max_file_bytes = 1ull << 30;  // RLIMIT_FSIZE
  std::uint64_t max_open_files = 1024;        // RLIMIT_NOFILE
  std::uint64_t max_address_space_mb = 8192;  // RLIMIT_AS; 0 = unlimited
  std::uint64_t max_processes = 512;          // RLIMIT_NPROC, counted per user namespace
};

Result<void> apply_resource_limits(const JobLimits& limits);

}  // namespace loopr::runner
