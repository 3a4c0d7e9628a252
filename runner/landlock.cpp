#include "runner/landlock.hpp"

#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

#include "common/unique_fd.hpp"
#include "runner/sandbox_step.hpp"

namespace loopr::runner {
namespace {

constexpr const char* kLandlockStep = "landlock";

// Rights added after ABI 2 (uapi values, stable).
constexpr std::uint64_t kFsTruncate = 1ull << 14;        // ABI 3
constexpr std::uint64_t kFsIoctlDev = 1ull << 15;        // ABI 5
constexpr std::uint64_t kNetBindTcp = 1ull << 0;         // ABI 4
constexpr std::uint64_t kNetConnectTcp = 1ull << 1;      // ABI 4
constexpr std::uint64_t kScopeAbstractUnix = 1ull << 0;  // ABI 6
constexpr std::uint64_t kScopeSignal = 1ull << 1;        // ABI 6

// landlock_ruleset_attr as of ABI 6; the size passed tells the kernel which
// fields are present.
struct RulesetAttr {
  std::uint64_t handled_access_fs;
  std::uint64_t handled_access_net;
  std::uint64_t scoped;
};

constexpr std::uint64_t kFsRead =
    LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
constexpr std::uint64_t kFsWriteAbi1 =
    LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
    LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
    LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
    LANDLOCK_ACCESS_FS_MAKE_SYM;
// Never granted anywhere: device nodes.
constexpr std::uint64_t kFsDevices = LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_BLOCK;

std::uint64_t handled_fs_for(int abi) {
  std::uint64_t handled = kFsRead | kFsWriteAbi1;
  if (abi >= 2) handled |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) handled |= kFsTruncate;
  if (abi >= 5) handled |= kFsIoctlDev;
  return handled;
}

Result<void> allow_beneath(int ruleset, const std::string& path, std::uint64_t access) {
  UniqueFd dir(::open(path.c_str(), O_PATH | O_CLOEXEC));
  if (!dir) return step_failed(kLandlockStep, "open " + path + " for a rule", errno);
  landlock_path_beneath_attr rule{};
  rule.allowed_access = access;
  rule.parent_fd = dir.get();
  if (::syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0) {
    return step_failed(kLandlockStep, "add a rule for " + path, errno);
  }
  return {};
}

}  // namespace

int landlock_abi() {
  const long abi =
      ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

Result<void> restrict_with_landlock(const LandlockPolicy& policy) {
  const int abi = landlock_abi();
  if (abi < 1) {
    return step_failed(kLandlockStep,
                       "Landlock is not available (Linux >= 5.13 with lsm=...,landlock needed)");
  }
  if (policy.require_scoping && abi < 6) {
    return step_failed(kLandlockStep,
                       "this lane needs Landlock ABI 6 (Linux >= 6.12) to keep abstract "
                       "Unix sockets out of reach; the kernel has ABI " +
                           std::to_string(abi));
  }
  RulesetAttr attr{};
  attr.handled_access_fs = handled_fs_for(abi);
  std::size_t attr_size = sizeof(std::uint64_t);
  if (abi >= 4) {
    attr_size = 2 * sizeof(std::uint64_t);
    if (policy.deny_tcp) attr.handled_access_net = kNetBindTcp | kNetConnectTcp;
  }
  if (abi >= 6) {
    attr_size = sizeof attr;
    attr.scoped = kScopeAbstractUnix | kScopeSignal;
  }
  UniqueFd ruleset(static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0)));
  if (!ruleset) return step_failed(kLandlockStep, "create the ruleset", errno);

  const std::uint64_t handled = attr.handled_access_fs;
  if (auto r = allow_beneath(ruleset.get(), "/", kFsRead); !r) return r;
  for (const std::string& dir : policy.writable_dirs) {
    if (auto r = allow_beneath(ruleset.get(), dir, handled & ~kFsDevices); !r) return r;
  }
  const std::uint64_t device_use =
      handled & (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | kFsIoctlDev);
  if (auto r = allow_beneath(ruleset.get(), "/dev", device_use | kFsRead); !r) return r;

  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return step_failed(kLandlockStep, "set no_new_privs", errno);
  }
  if (::syscall(SYS_landlock_restrict_self, ruleset.get(), 0) != 0) {
    return step_failed(kLandlockStep, "restrict the job", errno);
  }
  return {};
}

}  // namespace loopr::runner
