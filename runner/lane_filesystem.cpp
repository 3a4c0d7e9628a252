#include "runner/lane_filesystem.hpp"

#include <fcntl.h>
#include <linux/mount.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>

#include "common/open_no_symlinks.hpp"
#include "common/path_beneath.hpp"
#include "runner/linked_git_dir.hpp"
#include "runner/sandbox_step.hpp"

namespace loopr::runner {
namespace {

constexpr const char* kMountStep = "mount namespace";
constexpr const char* kNewRoot = "/newroot";
constexpr const char* kOldRoot = "/oldroot";
constexpr const char* kRootsSetting = "sandbox.worktree_roots in loopr.toml";
constexpr const char* kReadPathsSetting = "sandbox.read_paths in loopr.toml";

Result<void> do_mount(const std::string& source, const std::string& target, const char* type,
                      unsigned long flags, const char* data, const char* what) {
  if (::mount(source.empty() ? nullptr : source.c_str(), target.c_str(), type, flags, data) != 0) {
    return step_failed(kMountStep, std::string(what) + " at " + target, errno);
  }
  return {};
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// mkdir -p, for mount points inside tmpfs folders this module created.
Result<void> make_directories(const std::string& path) {
  for (std::size_t slash = 1; slash != std::string::npos;) {
    slash = path.find('/', slash + 1);
    const std::string prefix = path.substr(0, slash);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return step_failed(kMountStep, "create mount point " + prefix, errno);
    }
  }
  return {};
}

// A folder, or an empty file to mount a file on, at `path`.
Result<void> make_mount_point(const std::string& path, bool directory) {
  if (directory) return make_directories(path);
  const std::string parent = path.substr(0, path.rfind('/'));
  if (!parent.empty()) {
    if (auto r = make_directories(parent); !r) return r;
  }
  const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0 && errno != EEXIST && errno != EROFS && errno != EISDIR)
    return step_failed(kMountStep, "create mount point " + path, errno);
  if (fd >= 0) ::close(fd);
  return {};
}

// Host paths resolved before the pivot: a symlink such as /var/run -> /run
// must be followed in the host's view, not in the staging root's.
std::vector<std::string> canonical_paths(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& path : paths) {
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved) != nullptr && std::string_view(resolved) != "/") {
      out.emplace_back(resolved);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The hidden paths, canonical, each with where it comes from (for error
// messages); resolved before the pivot, in the host's view. One the runner
// cannot resolve there (as root it is nobody on the host by now, and a root
// such as /root is closed to it) is kept as given, made lexically normal,
// when it lies in a writable root: it is reached through the root's own
// mount when covered, refusing symlinks on the way.
std::map<std::string, std::string> resolve_hidden(const LaneFilesystemSpec& spec,
                                                  const std::vector<std::string>& writable) {
  std::map<std::string, std::string> out;
  for (const std::string& path : spec.hidden_paths) {
    const auto given = spec.hidden_origins.find(path);
    const std::string origin =
        given != spec.hidden_origins.end() ? given->second : "a folder hidden from jobs by default";
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved) != nullptr) {
      if (std::string_view(resolved) != "/") out.emplace(resolved, origin);
      continue;
    }
    if (errno == ENOENT || path.empty() || path.front() != '/') continue;
    std::string normal = std::filesystem::path(path).lexically_normal().string();
    while (normal.size() > 1 && normal.back() == '/')
      normal.pop_back();
    if (normal.find("/..") != std::string::npos) continue;
    if (std::any_of(writable.begin(), writable.end(), [&](const std::string& root) {
          return normal != root && same_or_beneath(normal, root);
        })) {
      out.emplace(normal, origin);
    }
  }
  return out;
}

// `r`, naming the setting or folder `path` came from if it failed.
Result<void> blamed(Result<void> r, const std::string& path, const std::string& origin) {
  if (r) return r;
  return blame_setting(std::move(r).error(), path, origin);
}

Result<void> set_read_only(const std::string& path, unsigned int flags, const char* what) {
  // mount_setattr, unlike MS_REMOUNT, leaves the flags the host locked alone.
  mount_attr read_only{};
  read_only.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID;
  if (::syscall(SYS_mount_setattr, AT_FDCWD, path.c_str(), flags, &read_only, sizeof read_only) !=
      0) {
    return step_failed(kMountStep, std::string(what) + " " + path, errno);
  }
  return {};
}

bool is_within_any(const std::string& path, const std::vector<std::string>& dirs) {
  return std::any_of(dirs.begin(), dirs.end(),
                     [&](const std::string& dir) { return same_or_beneath(path, dir); });
}

// A detached copy of the tree at `path` (open_tree OPEN_TREE_CLONE |
// AT_RECURSIVE, Linux >= 5.2), or of the folder `folder` refers to if valid.
Result<UniqueFd> clone_tree(const std::string& path, int folder = -1) {
  const unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE;
  const long fd = folder >= 0 ? ::syscall(SYS_open_tree, folder, "", flags | AT_EMPTY_PATH)
                              : ::syscall(SYS_open_tree, AT_FDCWD, path.c_str(), flags);
  if (fd < 0)
    return step_failed(kMountStep, "clone the mount tree of " + path + " (open_tree)", errno);
  return UniqueFd(static_cast<int>(fd));
}

// Attaches a detached tree at `target`, an existing folder.
Result<void> attach_tree(const UniqueFd& tree, const std::string& target) {
  if (::syscall(SYS_move_mount, tree.get(), "", AT_FDCWD, target.c_str(),
                MOVE_MOUNT_F_EMPTY_PATH) != 0) {
    return step_failed(kMountStep, "attach a mount at " + target + " (move_mount)", errno);
  }
  return {};
}

Result<void> set_tree_read_only(const UniqueFd& tree, const std::string& path) {
  mount_attr read_only{};
  read_only.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID;
  if (::syscall(SYS_mount_setattr, tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &read_only,
                sizeof read_only) != 0) {
    return step_failed(kMountStep, "make read-only: " + path, errno);
  }
  return {};
}

Result<void> build_dev(const std::string& dev) {
  if (auto r = do_mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=0755",
                        "mount /dev tmpfs");
      !r) {
    return r;
  }
  for (const char* node : {"null", "zero", "full", "random", "urandom"}) {
    const std::string target = dev + "/" + node;
    const int fd = ::open(target.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
    if (fd < 0) return step_failed(kMountStep, "create " + target, errno);
    ::close(fd);
    if (auto r = do_mount(std::string(kOldRoot) + "/dev/" + node, target, nullptr, MS_BIND, nullptr,
                          "bind device");
        !r) {
      return r;
    }
  }
  const std::pair<const char*, const char*> links[] = {{"fd", "/proc/self/fd"},
                                                       {"stdin", "/proc/self/fd/0"},
                                                       {"stdout", "/proc/self/fd/1"},
                                                       {"stderr", "/proc/self/fd/2"}};
  for (const auto& [name, target] : links) {
    if (::symlink(target, (dev + "/" + name).c_str()) != 0) {
      return step_failed(kMountStep, std::string("create /dev/") + name, errno);
    }
  }
  if (::mkdir((dev + "/shm").c_str(), 0755) != 0)
    return step_failed(kMountStep, "mkdir /dev/shm", errno);
  {
    const std::string apt = "APT::Sandbox::User \"root\";\n";
    const std::string path = dev + std::string(kJobAptConfig).substr(4);  // "/dev" is `dev`
    const UniqueFd conf(::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644));
    if (!conf || ::write(conf.get(), apt.data(), apt.size()) != static_cast<ssize_t>(apt.size())) {
      return step_failed(kMountStep, std::string("write the jobs' apt settings ") + kJobAptConfig,
                         errno);
    }
  }
  if (auto r = do_mount("tmpfs", dev + "/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777",
                        "mount /dev/shm");
      !r) {
    return r;
  }
  return do_mount("", dev, nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC, nullptr,
                  "remount /dev read-only");
}

// A root inside a folder the runner cannot pass through (a 0700 folder of
// another user: as root, the runner is nobody by now) cannot get a mount
// point at its path. The first such folder above `path` is covered with an
// empty tmpfs (read-only at the end, `covers`), in which the path is then
// recreated like in a hidden path's cover: jobs see the root and nothing
// else of that folder, which they could not read anyway.
Result<void> cover_closed_folder_above(const std::string& new_root, const std::string& path,
                                       std::vector<std::string>& covers) {
  for (std::size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    const std::string folder = path.substr(0, slash);
    const std::string target = new_root + folder;
    if (::access(target.c_str(), X_OK) == 0) continue;
    if (errno != EACCES) return {};  // missing: make_directories reports it
    if (auto r = do_mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                          "size=64k,mode=0755", "cover the closed folder above a writable root");
        !r) {
      return r;
    }
    covers.push_back(folder);
    return {};
  }
  return {};
}

}  // namespace

Result<void> check_writable_roots(const std::vector<std::string>& roots) {
  for (const std::string& root : roots) {
    struct stat st {};
    if (root.empty() || root.front() != '/') {
      return blame_setting(step_failed(kMountStep, "writable root '" + root + "' is not absolute"),
                           root, kRootsSetting);
    }
    if (::stat(root.c_str(), &st) != 0) {
      return blame_setting(step_failed(kMountStep, "writable root '" + root + "'", errno), root,
                           kRootsSetting);
    }
    if (!S_ISDIR(st.st_mode)) {
      return blame_setting(step_failed(kMountStep, "writable root '" + root + "' is not a folder"),
                           root, kRootsSetting);
    }
  }
  return {};
}

Result<void> build_lane_filesystem(const LaneFilesystemSpec& spec,
                                   std::map<std::string, UniqueFd> root_mounts) {
  // A root with a ready mount was checked and opened before the runner
  // became an unprivileged uid (as root: user_namespace.hpp), which may no
  // longer see its way to it.
  std::vector<std::string> writable;
  for (const std::string& root : spec.writable_roots) {
    if (root_mounts.contains(root)) {
      writable.push_back(root);
      continue;
    }
    struct stat st {};
    if (root.empty() || root.front() != '/' || ::stat(root.c_str(), &st) != 0 ||
        !S_ISDIR(st.st_mode)) {
      return blame_setting(
          step_failed(kMountStep, "writable root '" + root + "' is not an existing folder"), root,
          kRootsSetting);
    }
    const auto resolved = canonical_paths({root});
    writable.insert(writable.end(), resolved.begin(), resolved.end());
  }
  std::sort(writable.begin(), writable.end());
  writable.erase(std::unique(writable.begin(), writable.end()), writable.end());
  const std::map<std::string, std::string> origin = resolve_hidden(spec, writable);
  std::vector<std::string> hidden;
  for (const auto& entry : origin)
    hidden.push_back(entry.first);
  const std::vector<std::string> readable = canonical_paths(spec.read_paths);
  const auto is_root = [&](const std::string& path) {
    return std::binary_search(writable.begin(), writable.end(), path);
  };

  // Nothing we mount may propagate back to the host.
  if (auto r = do_mount("", "/", nullptr, MS_REC | MS_PRIVATE, nullptr, "make / private"); !r) {
    return r;
  }
  // A small staging tmpfs becomes the root; the host stays reachable under
  // /oldroot while the lane's tree is assembled under /newroot.
  if (auto r = do_mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755",
                        "mount staging tmpfs");
      !r) {
    return r;
  }
  if (::mkdir("/tmp/newroot", 0755) != 0 || ::mkdir("/tmp/oldroot", 0755) != 0) {
    return step_failed(kMountStep, "create staging folders", errno);
  }
  if (::syscall(SYS_pivot_root, "/tmp", "/tmp/oldroot") != 0) {
    return step_failed(kMountStep, "pivot_root into the staging tmpfs", errno);
  }
  if (::chdir("/") != 0) return step_failed(kMountStep, "chdir /", errno);

  const std::string root = kNewRoot;
  if (auto r = do_mount(kOldRoot, root, nullptr, MS_BIND | MS_REC, nullptr, "bind the host root");
      !r) {
    return r;
  }
  mount_attr read_only{};
  read_only.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID;
  if (::syscall(SYS_mount_setattr, AT_FDCWD, kNewRoot, AT_RECURSIVE, &read_only,
                sizeof read_only) != 0) {
    return step_failed(kMountStep, "make the host root read-only (mount_setattr, Linux >= 5.12)",
                       errno);
  }

  const auto hide = [&](const std::string& path) {
    return blamed(do_mount("tmpfs", root + path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                           "size=1m,mode=0755", "hide"),
                  path, origin.at(path));
  };
  std::vector<std::string> hidden_mounted;
  for (const std::string& path : hidden) {
    // The private /tmp, /dev and the job's /proc replace these wholesale.
    if (same_or_beneath(path, "/tmp") || same_or_beneath(path, "/dev") ||
        same_or_beneath(path, "/proc"))
      continue;
    // A root's mount would cover this cover: those are hidden on top of it.
    if (is_within_any(path, writable)) continue;
    if (!is_directory(root + path)) continue;
    if (auto r = hide(path); !r) return r;
    hidden_mounted.push_back(path);
  }
  if (auto r = do_mount("tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
                        ("size=" + std::to_string(spec.tmp_size_mb) + "m,mode=1777").c_str(),
                        "mount private /tmp");
      !r) {
    return r;
  }
  if (auto r = build_dev(root + "/dev"); !r) return r;

  // The roots, and the hidden paths inside them (a root exactly at a hidden
  // path wins) covered on top of their mounts, outer paths first: a root
  // inside such a hidden path is then recreated in its cover, as in any
  // other. A read path inside one comes back read-only, from the root's own
  // mount (as root, the runner may not be able to reach the host's).
  std::vector<std::string> in_roots;
  for (const std::string& path : hidden) {
    if (is_within_any(path, writable) && !is_root(path)) in_roots.push_back(path);
  }
  std::vector<std::string> steps = writable;
  steps.insert(steps.end(), in_roots.begin(), in_roots.end());
  std::vector<std::string> closed_covers;  // cover_closed_folder_above
  std::sort(steps.begin(), steps.end());
  for (const std::string& path : steps) {
    const std::string target = root + path;
    if (!is_root(path)) {
      // Through the root's mount, with no symlink on the way: a path kept
      // as given (resolve_hidden) must be the folder it names.
      const UniqueFd folder = open_no_symlinks(AT_FDCWD, target, O_PATH | O_DIRECTORY);
      if (!folder && (errno == ENOENT || errno == ENOTDIR)) continue;
      if (!folder) {
        return blame_setting(
            step_failed(kMountStep, "open the folder to hide " + path + " (no symlinks)", errno),
            path, origin.at(path));
      }
      struct Kept {
        std::string path;
        UniqueFd tree;
      };
      std::vector<Kept> kept;
      for (const std::string& read : readable) {
        if (!same_or_beneath(read, path) || !exists(root + read)) continue;
        auto tree = clone_tree(root + read);
        if (!tree) return blame_setting(std::move(tree).error(), read, kReadPathsSetting);
        if (auto r = blamed(set_tree_read_only(*tree, read), read, kReadPathsSetting); !r) return r;
        kept.push_back({read, std::move(*tree)});
      }
      if (auto r = hide(path); !r) return r;
      hidden_mounted.push_back(path);
      for (const Kept& read : kept) {
        struct stat st {};
        if (::fstat(read.tree.get(), &st) != 0)
          return blame_setting(step_failed(kMountStep, "stat " + read.path, errno), read.path,
                               kReadPathsSetting);
        if (auto r = blamed(make_mount_point(root + read.path, S_ISDIR(st.st_mode)), read.path,
                            kReadPathsSetting);
            !r) {
          return r;
        }
        if (auto r = blamed(attach_tree(read.tree, root + read.path), read.path, kReadPathsSetting);
            !r) {
          return r;
        }
      }
      continue;
    }
    if (auto r = blamed(cover_closed_folder_above(root, path, closed_covers), path, kRootsSetting);
        !r) {
      return r;
    }
    if (!exists(target)) {
      if (auto r = blamed(make_directories(target), path, kRootsSetting); !r) return r;
    }
    if (auto mount = root_mounts.find(path); mount != root_mounts.end()) {
      if (auto r = blamed(attach_tree(mount->second, target), path, kRootsSetting); !r) return r;
      continue;
    }
    if (auto r = blamed(do_mount(kOldRoot + path, target, nullptr, MS_BIND | MS_REC, nullptr,
                                 "bind writable root"),
                        path, kRootsSetting);
        !r) {
      return r;
    }
  }
  // Read paths a hidden path covers come back read-only (those under a root
  // are the jobs' business: build_job_filesystem); what is hidden inside
  // them stays hidden.
  for (const std::string& path : readable) {
    if (!is_within_any(path, hidden_mounted) || is_within_any(path, writable)) continue;
    const std::string target = root + path;
    auto bind_read_only = [&]() -> Result<void> {
      if (auto r = make_mount_point(target, is_directory(kOldRoot + path)); !r) return r;
      if (auto r = do_mount(kOldRoot + path, target, nullptr, MS_BIND | MS_REC, nullptr,
                            "bind read path");
          !r) {
        return r;
      }
      return set_read_only(target, AT_RECURSIVE, "make read-only: read path");
    };
    if (auto r = blamed(bind_read_only(), path, kReadPathsSetting); !r) return r;
    for (const std::string& inner : hidden) {
      if (inner == path || !same_or_beneath(inner, path) || !is_directory(root + inner)) continue;
      if (auto r = hide(inner); !r) return r;
      hidden_mounted.push_back(inner);
    }
  }
  for (const std::string& path : closed_covers) {
    if (auto r = blamed(do_mount("", root + path, nullptr,
                                 MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr,
                                 "remount the cover of a closed folder read-only"),
                        path, kRootsSetting);
        !r) {
      return r;
    }
  }
  for (const std::string& path : hidden_mounted) {
    if (auto r = blamed(do_mount("", root + path, nullptr,
                                 MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr,
                                 "remount hidden folder read-only"),
                        path, origin.at(path));
        !r) {
      return r;
    }
  }

  // Stack the lane's tree on / and detach everything else, the staging tmpfs
  // and the host root with it.
  if (::chdir(kNewRoot) != 0) return step_failed(kMountStep, "chdir /newroot", errno);
  if (::syscall(SYS_pivot_root, ".", ".") != 0) {
    return step_failed(kMountStep, "pivot_root into the lane root", errno);
  }
  if (::umount2(".", MNT_DETACH) != 0) return step_failed(kMountStep, "detach the old root", errno);
  if (::chdir("/") != 0) return step_failed(kMountStep, "chdir /", errno);
  return {};
}

Result<void> build_job_filesystem(const std::string& worktree, const LaneFilesystemSpec& spec) {
  if (auto r = do_mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY,
                        nullptr, "mount the job's /proc");
      !r) {
    return r;
  }
  // Outer roots first, whatever order loopr.toml lists them in: an inner
  // root lies under an outer one's cover, so it needs no cover of its own.
  std::vector<std::string> roots = spec.writable_roots;
  std::sort(roots.begin(), roots.end());
  // What the job keeps of the roots, cloned before they are covered. The
  // worktree is opened without following symlinks, so a path component
  // swapped since LaneRunner resolved it cannot put another folder there.
  struct Kept {
    std::string path;
    UniqueFd tree;
  };
  std::vector<Kept> kept;
  const UniqueFd folder = open_no_symlinks(AT_FDCWD, worktree, O_PATH | O_DIRECTORY);
  if (!folder) return step_failed(kMountStep, "open the worktree " + worktree, errno);
  auto own = clone_tree(worktree, folder.get());
  if (!own) return std::move(own).error();
  kept.push_back({worktree, std::move(*own)});
  auto keep_read_only = [&](const std::string& path, int at) -> Result<void> {
    if (!is_within_any(path, roots) || same_or_beneath(path, worktree)) return {};
    auto tree = clone_tree(path, at);
    if (!tree) return std::move(tree).error();
    if (auto r = set_tree_read_only(*tree, path); !r) return r;
    kept.push_back({path, std::move(*tree)});
    return {};
  };
  if (auto git = find_linked_git_dir(worktree)) {
    if (auto r = keep_read_only(git->path, git->folder.get()); !r) return r;
  }
  for (const std::string& path : canonical_paths(spec.read_paths)) {
    if (auto r = blamed(keep_read_only(path, -1), path, kReadPathsSetting); !r) return r;
  }

  // A /tmp and a /dev/shm of the job's own, empty: what another job of the
  // lane left there (another loop's files, a full disk) is not this job's.
  // Roots beneath /tmp are covered again below, on the new /tmp.
  if (auto r = do_mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
                        ("size=" + std::to_string(spec.tmp_size_mb) + "m,mode=1777").c_str(),
                        "mount the job's /tmp");
      !r) {
    return r;
  }
  if (auto r = do_mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777",
                        "mount the job's /dev/shm");
      !r) {
    return r;
  }

  std::vector<std::string> covered;
  for (const std::string& root : roots) {
    if (is_within_any(root, covered)) continue;  // sorted: an outer root comes first
    if (auto r = make_mount_point(root, true); !r) return r;
    if (auto r = do_mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                          "size=64k,mode=0755", "cover the worktree root");
        !r) {
      return r;
    }
    covered.push_back(root);
  }
  // Outer paths first, so an inner one lands on top of them.
  std::sort(kept.begin(), kept.end(),
            [](const Kept& a, const Kept& b) { return a.path.size() < b.path.size(); });
  for (const Kept& tree : kept) {
    struct stat st {};
    if (::fstat(tree.tree.get(), &st) != 0)
      return step_failed(kMountStep, "stat " + tree.path, errno);
    if (auto r = make_mount_point(tree.path, S_ISDIR(st.st_mode)); !r) return r;
    if (auto r = attach_tree(tree.tree, tree.path); !r) return r;
  }
  for (const std::string& root : covered) {
    // A worktree that is the root itself lies on its cover: the cover is out
    // of sight, and this would make the worktree read-only.
    if (root == worktree) continue;
    if (auto r = set_read_only(root, 0, "make read-only: the cover of"); !r) return r;
  }

  const std::string git = worktree + "/.git";
  struct stat st {};
  if (::lstat(git.c_str(), &st) != 0) return {};
  if (S_ISLNK(st.st_mode)) {
    return step_failed(kMountStep, git + " is a symlink; refusing to run jobs in this worktree");
  }
  if (auto r = do_mount(git, git, nullptr, MS_BIND | MS_REC, nullptr, "bind .git"); !r) return r;
  return set_read_only(git, AT_RECURSIVE, "make read-only:");
}

}  // namespace loopr::runner
