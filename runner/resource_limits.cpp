#include "runner/resource_limits.hpp"

#include <sys/resource.h>

#include "runner/sandbox_step.hpp"

namespace loopr::runner {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif

Result<void> set_limit(int resource, rlim_t value, const char* name) {
  const rlimit limit{value, value};
  if (::setrlimit(resource, &limit) != 0) {
    return step_failed("resource limits", std::string("set ") + name, errno);
  }
  return {};
}

}  // namespace

Result<void> apply_resource_limits(const JobLimits& limits) {
  if (auto r = set_limit(RLIMIT_CORE, 0, "RLIMIT_CORE"); !r) return r;
  if (auto r = set_limit(RLIMIT_FSIZE, limits.max_file_bytes, "RLIMIT_FSIZE"); !r) return r;
  if (auto r = set_limit(RLIMIT_NOFILE, limits.max_open_files, "RLIMIT_NOFILE"); !r) return r;
  // An AddressSanitizer build of loopr-tool reserves terabytes of shadow
  // address space at start and cannot run under any RLIMIT_AS; there the limit
  // reaches commands only, through LOOPR_ADDRESS_SPACE_MB (run_command applies
  // it to the command it starts). Normal builds limit loopr-tool itself too.
  if (limits.max_address_space_mb != 0 && !kAddressSanitizer) {
    if (auto r = set_limit(RLIMIT_AS, limits.max_address_space_mb << 20, "RLIMIT_AS"); !r) return r;
  }
  return set_limit(RLIMIT_NPROC, limits.max_processes, "RLIMIT_NPROC");
}

}  // namespace loopr::runner
