#include "runner/lane_cgroup.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "common/unique_fd.hpp"

namespace loopr::runner {
namespace {

struct CgroupMount {
  std::string point;  // where it is mounted
  std::string root;   // which cgroup of the hierarchy is mounted there
  bool v2 = false;
};

// cgroup and cgroup2 mounts from /proc/self/mountinfo; for v1 only those
// carrying the pids controller.
std::vector<CgroupMount> cgroup_mounts() {
  std::vector<CgroupMount> mounts;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    // id parent major:minor root point options [optional...] - type source super-options
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream head(line.substr(0, dash));
    std::istringstream tail(line.substr(dash + 3));
    std::string id, parent, device, root, point, type, source, super_options;
    head >> id >> parent >> device >> root >> point;
    tail >> type >> source >> super_options;
    if (type == "cgroup2") {
      mounts.push_back({point, root, true});
    } else if (type == "cgroup" &&
               (super_options == "pids" || super_options.find(",pids") != std::string::npos ||
                super_options.rfind("pids,", 0) == 0)) {
      mounts.push_back({point, root, false});
    }
  }
  return mounts;
}

// The runner's cgroup path in the v2 hierarchy or the v1 pids hierarchy.
std::optional<std::string> own_cgroup(bool v2) {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const auto first = line.find(':');
    const auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (v2 && line.compare(0, first, "0") == 0 && controllers.empty()) return path;
    if (!v2) {
      std::istringstream list(controllers);
      std::string controller;
      while (std::getline(list, controller, ',')) {
        if (controller == "pids") return path;
      }
    }
  }
  return std::nullopt;
}

// The folder of cgroup `path` under `mount`, if that mount shows it.
std::optional<std::string> folder_of(const CgroupMount& mount, const std::string& path) {
  if (mount.root == "/") return mount.point + (path == "/" ? "" : path);
  if (path == mount.root) return mount.point;
  if (path.rfind(mount.root + "/", 0) == 0) return mount.point + path.substr(mount.root.size());
  return std::nullopt;
}

std::string errno_text(int err) {
  return std::strerror(err);
}

// Writes `content` to `path`; 0 or the errno.
int write_file(const std::string& path, const std::string& content) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return errno;
  if (::write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size())) {
    return errno;
  }
  return 0;
}

// Removes the cgroups that runners of this lane which have exited left
// behind. A runner that is still alive (perhaps between its mkdir and its
// move) keeps its own; a cgroup in use refuses rmdir anyway (EBUSY).
void remove_stale(const std::string& parent, const std::string& prefix) {
  DIR* dir = ::opendir(parent.c_str());
  if (dir == nullptr) return;
  while (dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string pid_text = name.substr(prefix.size());
    if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
    const long pid = std::strtol(pid_text.c_str(), nullptr, 10);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      ::rmdir((parent + "/" + name).c_str());
    }
  }
  ::closedir(dir);
}

// Creates the lane's cgroup under `parent` and moves the runner into it.
// Returns the cgroup's folder, or nullopt with `why` filled in.
std::optional<std::string> try_parent(const std::string& parent, const std::string& lane,
                                      std::uint64_t pids_max, std::string& why) {
  const std::string prefix = "loopr-" + lane + "-";
  remove_stale(parent, prefix);
  const std::string dir = parent + "/" + prefix + std::to_string(::getpid());
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    why = "mkdir " + dir + ": " + errno_text(errno);
    return std::nullopt;
  }
  const auto give_up = [&](const std::string& reason) -> std::optional<std::string> {
    ::rmdir(dir.c_str());
    why = reason;
    return std::nullopt;
  };
  if (::access((dir + "/pids.max").c_str(), F_OK) != 0) {
    return give_up(parent + ": the pids controller is not enabled for its children");
  }
  if (const int err = write_file(dir + "/pids.max", std::to_string(pids_max)); err != 0) {
    return give_up("write " + dir + "/pids.max: " + errno_text(err));
  }
  if (const int err = write_file(dir + "/cgroup.procs", std::to_string(::getpid())); err != 0) {
    return give_up("move into " + dir + ": " + errno_text(err));
  }
  return dir;
}

}  // namespace

LaneCgroupReport join_lane_cgroup(const std::string& lane, std::uint64_t pids_max) {
  std::vector<std::string> reasons;
  const auto mounts = cgroup_mounts();
  for (bool v2 : {true, false}) {
    const auto own = own_cgroup(v2);
    if (!own) continue;
    std::vector<std::string> parents;
    for (const CgroupMount& mount : mounts) {
      if (mount.v2 != v2) continue;
      if (auto folder = folder_of(mount, *own)) parents.push_back(*folder);
      // On v2, root may use the top of the hierarchy when its own cgroup
      // cannot have children with controllers.
      if (v2 && *own != "/" && mount.root == "/") parents.push_back(mount.point);
    }
    for (const std::string& parent : parents) {
      std::string why;
      if (auto dir = try_parent(parent, lane, pids_max, why)) {
        return {true, "pids.max " + std::to_string(pids_max) + " in " + *dir +
                          (v2 ? " (cgroup v2)" : " (cgroup v1)")};
      }
      reasons.push_back(why);
    }
  }
  std::string description = "no pids cgroup for the lane (";
  if (reasons.empty()) reasons.push_back("no cgroup hierarchy with the pids controller is mounted");
  for (std::size_t i = 0; i < reasons.size(); ++i)
    description += (i ? "; " : "") + reasons[i];
  description += "); jobs are limited by RLIMIT_NPROC only, which does not apply to uid 0";
  return {false, description};
}

}  // namespace loopr::runner
