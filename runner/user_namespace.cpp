#include "runner/user_namespace.hpp"

#include <fcntl.h>
#include <grp.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "runner/sandbox_step.hpp"

namespace loopr::runner {
namespace {

constexpr const char* kUserNamespaceStep = "user namespace";

Result<void> write_proc_file(const std::string& path, const std::string& content) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return step_failed(kUserNamespaceStep, "open " + path, errno);
  if (::write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size())) {
    return step_failed(kUserNamespaceStep, "write " + path, errno);
  }
  return {};
}

// `proc` is /proc/self or /proc/<pid> of a process that just entered a new
// user namespace: one uid and one gid, "<inside> <host> 1" each.
Result<void> map_ids(const std::string& proc, const std::string& uid_map,
                     const std::string& gid_map) {
  // setgroups must be denied before an unprivileged process may write gid_map.
  if (auto r = write_proc_file(proc + "/setgroups", "deny"); !r) return r;
  if (auto r = write_proc_file(proc + "/uid_map", uid_map + " 1\n"); !r) return r;
  return write_proc_file(proc + "/gid_map", gid_map + " 1\n");
}

Error userns_refused(int err) {
  return step_failed(kUserNamespaceStep,
                     "unshare(CLONE_NEWUSER) was refused (are unprivileged user namespaces "
                     "disabled, e.g. kernel.unprivileged_userns_clone=0 or "
                     "user.max_user_namespaces=0?)",
                     err);
}

// As root: a user namespace mapping 0 to the host's kJobHostIdAsRoot, made
// by a short-lived child (only a process outside it may write such a map),
// returned as an fd.
Result<UniqueFd> make_jobs_user_namespace() {
  int ready[2];
  int release[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) return step_failed(kUserNamespaceStep, "pipe", errno);
  UniqueFd ready_read(ready[0]), ready_write(ready[1]);
  if (::pipe2(release, O_CLOEXEC) != 0) return step_failed(kUserNamespaceStep, "pipe", errno);
  UniqueFd release_read(release[0]), release_write(release[1]);
  const pid_t child = ::fork();
  if (child < 0)
    return step_failed(kUserNamespaceStep, "fork the namespace's first process", errno);
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::close(release[1]);  // so that the parent's close is EOF here
    const char status = ::unshare(CLONE_NEWUSER) == 0 ? 'y' : static_cast<char>(errno);
    [[maybe_unused]] ssize_t n = ::write(ready[1], &status, 1);
    char byte;
    n = ::read(release[0], &byte, 1);  // EOF when the parent is done
    ::_exit(0);
  }
  ready_write.reset();
  release_read.reset();
  auto reap = [&] {
    release_write.reset();
    ::waitpid(child, nullptr, 0);
  };
  char status = 0;
  if (::read(ready_read.get(), &status, 1) != 1 || status != 'y') {
    reap();
    return userns_refused(status == 0 ? EIO : status);
  }
  const std::string proc = "/proc/" + std::to_string(child);
  const std::string to_host = "0 " + std::to_string(kJobHostIdAsRoot);
  auto mapped = map_ids(proc, to_host, to_host);
  UniqueFd ns(::open((proc + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC));
  const int saved = errno;
  reap();
  if (!mapped) return std::move(mapped).error();
  if (!ns) return step_failed(kUserNamespaceStep, "open " + proc + "/ns/user", saved);
  return ns;
}

// As root, before leaving the host's user namespace (only there may an
// ext4 mount be idmapped): a detached copy of each root, idmapped to `ns`.
Result<std::map<std::string, UniqueFd>> idmap_roots(const std::vector<std::string>& roots,
                                                    const UniqueFd& ns) {
  std::map<std::string, UniqueFd> mounts;
  for (const std::string& root : roots) {
    UniqueFd tree(static_cast<int>(::syscall(SYS_open_tree, AT_FDCWD, root.c_str(),
                                             OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE)));
    if (!tree) {
      return blame_setting(step_failed(kUserNamespaceStep,
                                       "clone the worktree root " + root + " (open_tree)", errno),
                           root, "sandbox.worktree_roots in loopr.toml");
    }
    mount_attr idmap{};
    idmap.attr_set = MOUNT_ATTR_IDMAP;
    idmap.userns_fd = static_cast<__u64>(ns.get());
    if (::syscall(SYS_mount_setattr, tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &idmap,
                  sizeof idmap) != 0) {
      // A root on a filesystem that cannot be idmapped: another root will do.
      return blame_setting(
          step_failed(kUserNamespaceStep,
                      "idmap the worktree root " + root +
                          " so jobs, which do not run as root, can write it (mount_setattr "
                          "MOUNT_ATTR_IDMAP: Linux >= 5.12 and a filesystem that supports it)",
                      errno),
          root, "sandbox.worktree_roots in loopr.toml");
    }
    mounts.emplace(root, std::move(tree));
  }
  return mounts;
}

Result<std::map<std::string, UniqueFd>> enter_as_root(const std::vector<std::string>& roots) {
  auto ns = make_jobs_user_namespace();
  if (!ns) return std::move(ns).error();
  auto mounts = idmap_roots(roots, *ns);
  if (!mounts) return mounts;
  // Root's supplementary groups (gid 0 among them) would follow the runner
  // in; the namespace denies setgroups, so drop them now.
  if (::setgroups(0, nullptr) != 0) {
    return step_failed(kUserNamespaceStep, "drop supplementary groups", errno);
  }
  if (::setns(ns->get(), CLONE_NEWUSER) != 0) {
    return step_failed(kUserNamespaceStep, "enter the jobs' user namespace (setns)", errno);
  }
  // Become the namespace's 0, host 65534: keeps every capability in it.
  if (::setresgid(0, 0, 0) != 0 || ::setresuid(0, 0, 0) != 0) {
    return step_failed(
        kUserNamespaceStep,
        "become uid/gid 0 of the namespace (host " + std::to_string(kJobHostIdAsRoot) + ")", errno);
  }
  return mounts;
}

}  // namespace

Result<std::map<std::string, UniqueFd>> enter_user_namespace(
    const std::vector<std::string>& writable_roots) {
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  if (uid == 0) return enter_as_root(writable_roots);
  if (::unshare(CLONE_NEWUSER) != 0) return userns_refused(errno);
  const std::string same_uid = std::to_string(uid) + " " + std::to_string(uid);
  const std::string same_gid = std::to_string(gid) + " " + std::to_string(gid);
  if (auto r = map_ids("/proc/self", same_uid, same_gid); !r) return std::move(r).error();
  return std::map<std::string, UniqueFd>{};
}

}  // namespace loopr::runner
