#include "runner/user_namespace.hpp"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <string>

#include "common/unique_fd.hpp"
#include "runner/sandbox_step.hpp"

namespace loopr::runner {
namespace {

Result<void> write_proc_file(const char* path, const std::string& content) {
  UniqueFd fd(::open(path, O_WRONLY | O_CLOEXEC));
  if (!fd) return step_failed("user namespace", std::string("open ") + path, errno);
  if (::write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size())) {
    return step_failed("user namespace", std::string("write ") + path, errno);
  }
  return {};
}

}  // namespace

Result<void> enter_user_namespace() {
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  if (::unshare(CLONE_NEWUSER) != 0) {
    return step_failed("user namespace",
                       "unshare(CLONE_NEWUSER) was refused (are unprivileged user namespaces "
                       "disabled, e.g. kernel.unprivileged_userns_clone=0 or "
                       "user.max_user_namespaces=0?)",
                       errno);
  }
  // setgroups must be denied before an unprivileged process may write gid_map.
  if (auto r = write_proc_file("/proc/self/setgroups", "deny"); !r) return r;
  if (auto r = write_proc_file("/proc/self/uid_map",
                               std::to_string(uid) + " " + std::to_string(uid) + " 1\n");
      !r) {
    return r;
  }
  return write_proc_file("/proc/self/gid_map",
                         std::to_string(gid) + " " + std::to_string(gid) + " 1\n");
}

}  // namespace loopr::runner
