// rlimits for a job's processes. Memory is a cgroup limit (lane_cgroup.hpp,
// JobMemoryCgroups); RLIMIT_AS here is only the optional address_space_mb,
// off by default, because runtimes that reserve address space up front
// (Node's WebAssembly, the JVM) fail under any useful value. Process counts
// are the lane's pids cgroup where the machine allows one, RLIMIT_NPROC
// always (the runner logs which apply).
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
  std::uint64_t max_address_space_mb = 0;     // RLIMIT_AS ([lanes.X] address_space_mb); 0 = none
  std::uint64_t max_processes = 512;          // RLIMIT_NPROC, counted per user namespace
};

Result<void> apply_resource_limits(const JobLimits& limits);

}  // namespace loopr::runner
