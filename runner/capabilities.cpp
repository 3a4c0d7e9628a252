#include "runner/capabilities.hpp"

#include <sys/capability.h>
#include <sys/prctl.h>

#include "runner/sandbox_step.hpp"

namespace loopr::runner {

Result<void> drop_all_capabilities() {
  constexpr const char* kStep = "drop capabilities";
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) {
    return step_failed(kStep, "clear the ambient set", errno);
  }
  // The bounding set needs CAP_SETPCAP, so it goes first. Up to the kernel's
  // last capability (EINVAL after it), which may be newer than our headers.
  for (int cap = 0; cap < 64; ++cap) {
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0) continue;
    if (errno == EINVAL) break;  // past the last one
    return step_failed(kStep, "drop capability " + std::to_string(cap) + " from the bounding set",
                       errno);
  }
  cap_t empty = ::cap_init();
  if (empty == nullptr) return step_failed(kStep, "cap_init", errno);
  const int rc = ::cap_set_proc(empty);
  const int err = errno;
  ::cap_free(empty);
  if (rc != 0) return step_failed(kStep, "clear effective, permitted and inheritable sets", err);
  return {};
}

}  // namespace loopr::runner
