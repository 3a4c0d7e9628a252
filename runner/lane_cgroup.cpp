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

// Whether `list` (space-separated, as cgroup.controllers) names `controller`.
bool has_controller_word(const std::string& list, const std::string& controller) {
  std::istringstream words(list);
  std::string word;
  while (words >> word) {
    if (word == controller) return true;
  }
  return false;
}

bool has_controller(const std::string& options, const std::string& controller) {
  std::istringstream list(options);
  std::string option;
  while (std::getline(list, option, ',')) {
    if (option == controller) return true;
  }
  return false;
}

// cgroup and cgroup2 mounts from /proc/self/mountinfo; for v1 only those
// carrying `controller`.
std::vector<CgroupMount> cgroup_mounts(const std::string& controller) {
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
    } else if (type == "cgroup" && has_controller(super_options, controller)) {
      mounts.push_back({point, root, false});
    }
  }
  return mounts;
}

// The runner's cgroup path in the v2 hierarchy or the v1 hierarchy of
// `controller`.
std::optional<std::string> own_cgroup(bool v2, const std::string& controller) {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const auto first = line.find(':');
    const auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (v2 && line.compare(0, first, "0") == 0 && controllers.empty()) return path;
    if (!v2 && has_controller(controllers, controller)) return path;
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
    // "<pid>", or "<pid>-job<i>" / "<pid>-workers" for the memory cgroups.
    std::string pid_text = name.substr(prefix.size());
    if (const auto dash = pid_text.find('-'); dash != std::string::npos) {
      const std::string kind = pid_text.substr(dash + 1);
      const bool job = kind.rfind("job", 0) == 0 && kind.size() > 3 &&
                       kind.find_first_not_of("0123456789", 3) == std::string::npos;
      if (!job && kind != "workers") continue;
      pid_text.resize(dash);
    }
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

// The whole (small) content of the file at `path`; empty if unreadable.
std::string read_small(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Makes job cgroup `dir` with the memory limit; its slot, or nullopt with
// `why` filled in (and `dir` removed).
std::optional<JobMemoryCgroups::Slot> make_memory_slot(const std::string& dir, bool v2,
                                                       std::uint64_t bytes,
                                                       std::uint64_t pids_per_job,
                                                       bool require_pids, std::string& why) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    why = "mkdir " + dir + ": " + errno_text(errno);
    return std::nullopt;
  }
  const auto give_up = [&](const std::string& reason) -> std::optional<JobMemoryCgroups::Slot> {
    ::rmdir(dir.c_str());
    why = reason;
    return std::nullopt;
  };
  const std::string limit_file = dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes");
  if (::access(limit_file.c_str(), F_OK) != 0) {
    return give_up(dir + ": no " + limit_file.substr(dir.size() + 1) +
                   " (the memory controller is not enabled for its parent's children)");
  }
  if (const int err = write_file(limit_file, std::to_string(bytes)); err != 0) {
    return give_up("write " + limit_file + ": " + errno_text(err));
  }
  if (v2 && ::access((dir + "/pids.max").c_str(), F_OK) == 0) {
    if (const int err = write_file(dir + "/pids.max", std::to_string(pids_per_job)); err != 0) {
      return give_up("write " + dir + "/pids.max: " + errno_text(err));
    }
  } else if (v2 && require_pids) {
    return give_up(dir +
                   ": no pids.max (the pids controller is not enabled for its parent's "
                   "children), so a job there would escape the lane's pids limit");
  }
  // Swap would let a job exceed the limit by paging out: none beyond it.
  // Optional (a kernel without swap accounting has no such file).
  if (v2) {
    write_file(dir + "/memory.swap.max", "0");
  } else {
    write_file(dir + "/memory.memsw.limit_in_bytes", std::to_string(bytes));
  }
  JobMemoryCgroups::Slot slot;
  slot.path = dir;
  slot.procs.reset(::open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
  if (!slot.procs) return give_up("open " + dir + "/cgroup.procs: " + errno_text(errno));
  const std::string events = dir + (v2 ? "/memory.events" : "/memory.oom_control");
  slot.events.reset(::open(events.c_str(), O_RDONLY | O_CLOEXEC));
  if (!slot.events) return give_up("open " + events + ": " + errno_text(errno));
  return slot;
}

// The parent folders to try for the job memory cgroups, in order, each with
// whether it is on cgroup v2.
std::vector<std::pair<std::string, bool>> memory_parents(const std::string& lane_dir_name) {
  std::vector<std::pair<std::string, bool>> parents;
  for (bool v2 : {true, false}) {
    const auto mounts = cgroup_mounts("memory");
    auto own = own_cgroup(v2, "memory");
    if (!own) continue;
    // The runner may sit in its lane's pids cgroup already: its jobs' memory
    // cgroups go beside that one.
    const std::string suffix = "/" + lane_dir_name;
    if (own->size() > suffix.size() &&
        own->compare(own->size() - suffix.size(), suffix.size(), suffix) == 0) {
      own->resize(own->size() - suffix.size());
      if (own->empty()) *own = "/";
    }
    for (const CgroupMount& mount : mounts) {
      if (mount.v2 != v2) continue;
      if (auto folder = folder_of(mount, *own)) parents.emplace_back(*folder, v2);
      if (v2 && *own != "/" && mount.root == "/") parents.emplace_back(mount.point, v2);
    }
  }
  return parents;
}

}  // namespace

LaneCgroupReport join_lane_cgroup(const std::string& lane, std::uint64_t pids_max) {
  std::vector<std::string> reasons;
  const auto mounts = cgroup_mounts("pids");
  for (bool v2 : {true, false}) {
    const auto own = own_cgroup(v2, "pids");
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

namespace loopr::runner {

JobMemoryCgroups JobMemoryCgroups::make(const std::string& lane, std::uint64_t memory_mb, int slots,
                                        std::uint64_t pids_per_job, bool lane_pids_on_v2) {
  JobMemoryCgroups pool;
  pool.memory_mb_ = memory_mb;
  if (memory_mb == 0) {
    pool.description_ = "no memory limit for jobs ([lanes." + lane + "] memory_mb is 0 or unset)";
    return pool;
  }
  const std::string prefix = "loopr-" + lane + "-";
  const std::string lane_dir_name = prefix + std::to_string(::getpid());
  const std::uint64_t bytes = memory_mb << 20;
  std::vector<std::string> reasons;
  for (const auto& [parent, v2] : memory_parents(lane_dir_name)) {
    remove_stale(parent, prefix);
    if (v2) {
      // Enabled for the parent's children only if the parent may have them
      // (no processes of its own); a refusal shows in the slot's check.
      const std::string controllers = read_small(parent + "/cgroup.controllers");
      const std::string enabled = read_small(parent + "/cgroup.subtree_control");
      for (const char* controller : {"memory", "pids"}) {
        if (has_controller_word(controllers, controller) &&
            !has_controller_word(enabled, controller)) {
          write_file(parent + "/cgroup.subtree_control", std::string("+") + controller);
        }
      }
    }
    std::vector<Slot> made;
    std::string why;
    // One per job slot, and the last one for the lane's warm workers.
    for (int i = 0; i <= slots; ++i) {
      const std::string name = i < slots ? "-job" + std::to_string(i) : std::string("-workers");
      auto slot = make_memory_slot(parent + "/" + lane_dir_name + name, v2, bytes, pids_per_job,
                                   lane_pids_on_v2, why);
      if (!slot) break;
      made.push_back(std::move(*slot));
    }
    if (static_cast<int>(made.size()) == slots + 1) {
      pool.workers_ = std::move(made.back());
      made.pop_back();
      pool.slots_ = std::move(made);
      pool.description_ = "memory limit " + std::to_string(memory_mb) + " MiB per job (" +
                          (v2 ? "memory.max, cgroup v2" : "memory.limit_in_bytes, cgroup v1") +
                          ") in " + parent + "/" + lane_dir_name + "-job0.." +
                          std::to_string(slots - 1) +
                          ", and as much for the lane's warm workers "
                          "together (" +
                          lane_dir_name + "-workers)";
      return pool;
    }
    for (const Slot& slot : made)
      ::rmdir(slot.path.c_str());
    made.clear();
    reasons.push_back(why);
  }
  if (reasons.empty()) reasons.push_back("no cgroup hierarchy with the memory controller");
  std::string description = "no memory cgroup for the lane's jobs (";
  for (std::size_t i = 0; i < reasons.size(); ++i)
    description += (i ? "; " : "") + reasons[i];
  description += "): [lanes." + lane + "] memory_mb = " + std::to_string(memory_mb) +
                 " is NOT applied; jobs run without a memory limit (the machine does not "
                 "delegate a memory cgroup to this user; run looprd as root or under a cgroup v2 "
                 "delegation, e.g. systemd's Delegate=yes)";
  pool.description_ = std::move(description);
  return pool;
}

int JobMemoryCgroups::acquire() {
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (!slots_[i].busy) {
      slots_[i].busy = true;
      return static_cast<int>(i);
    }
  }
  return -1;
}

void JobMemoryCgroups::release(int slot) {
  if (slot >= 0 && static_cast<std::size_t>(slot) < slots_.size())
    slots_[static_cast<std::size_t>(slot)].busy = false;
}

int JobMemoryCgroups::procs_fd(int slot) const {
  if (slot < 0 || static_cast<std::size_t>(slot) >= slots_.size()) return -1;
  return slots_[static_cast<std::size_t>(slot)].procs.get();
}

std::uint64_t JobMemoryCgroups::oom_kills(int slot) const {
  if (slot < 0 || static_cast<std::size_t>(slot) >= slots_.size()) return 0;
  char buffer[1024];
  const ssize_t n =
      ::pread(slots_[static_cast<std::size_t>(slot)].events.get(), buffer, sizeof buffer - 1, 0);
  if (n <= 0) return 0;
  // "oom_kill N" is a line of memory.events (v2) and of memory.oom_control (v1).
  std::istringstream lines(std::string(buffer, static_cast<std::size_t>(n)));
  std::string key;
  std::uint64_t value = 0;
  while (lines >> key >> value) {
    if (key == "oom_kill") return value;
  }
  return 0;
}

}  // namespace loopr::runner
