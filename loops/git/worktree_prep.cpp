#include "loops/git/worktree_prep.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <string_view>

#include "common/unique_fd.hpp"
#include "loops/git/git_command.hpp"
#include "loops/git/git_support.hpp"
#include "loops/git/worktrees.hpp"

namespace loopr::loops {
namespace {

namespace fs = std::filesystem;
using detail::open_repo;
using detail::repo_git;
using detail::worktree_git;

constexpr int kMaxDepth = 256;
// Text files of a build folder larger than this are not searched.
constexpr off_t kMaxRelocatedFile = 32 * 1024 * 1024;
constexpr std::size_t kMaxNotes = 20;

void note(PrepReport& report, std::string text) {
  if (report.notes.size() < kMaxNotes) report.notes.push_back(std::move(text));
}

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    if (end > start) parts.emplace_back(path.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

UniqueFd open_dir_at(int dir, const std::string& name) {
  return UniqueFd(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

// Folders a copy never enters, on the way down to a pattern's match or
// below it: the new worktree itself and the folder of all loops' worktrees
// (when they lie inside the source: another loop's files are not this
// loop's to have).
struct Fence {
  dev_t worktree_dev = 0;
  ino_t worktree = 0;
  dev_t worktrees_dev = 0;  // the worktree's parent folder (its own device)
  ino_t worktrees = 0;

  bool blocks(const struct stat& st) const {
    return S_ISDIR(st.st_mode) && ((st.st_dev == worktree_dev && st.st_ino == worktree) ||
                                   (st.st_dev == worktrees_dev && st.st_ino == worktrees));
  }
};

// Opens the folder `rel` beneath `top` without following any link on the
// way, and without entering a fenced folder (or a .git).
UniqueFd open_dir_beneath(int top, const std::string& rel, const Fence* fence = nullptr) {
  UniqueFd current(::fcntl(top, F_DUPFD_CLOEXEC, 0));
  for (const std::string& part : split_path(rel)) {
    if (!current || part == ".." || part == "." || (fence != nullptr && part == ".git")) {
      return UniqueFd(-1);
    }
    current = open_dir_at(current.get(), part);
    struct stat st {};
    if (current && fence != nullptr && (::fstat(current.get(), &st) != 0 || fence->blocks(st))) {
      return UniqueFd(-1);
    }
  }
  return current;
}

std::vector<std::string> list_dir(int dir) {
  std::vector<std::string> names;
  const int copy = ::fcntl(dir, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return names;
  DIR* d = ::fdopendir(copy);
  if (d == nullptr) {
    ::close(copy);
    return names;
  }
  while (const dirent* entry = ::readdir(d)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

// "a:b::c" -> {"a", "b", "", "c"}.
std::vector<std::string> split_path_list(const std::string& list) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = list.find(':', start);
    parts.push_back(list.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

bool has_glob(const std::string& part) {
  return part.find_first_of("*?[") != std::string::npos;
}

// The paths (relative to `top`) that `pattern` matches, one component at a
// time; intermediate components must be folders, never links, never a
// .git, never fenced.
void expand(int top, const std::vector<std::string>& parts, std::size_t index,
            const std::string& prefix, bool folders_only, const Fence& fence,
            std::vector<std::string>& out) {
  UniqueFd dir = open_dir_beneath(top, prefix, &fence);
  if (!dir) return;
  const std::string& part = parts[index];
  std::vector<std::string> names;
  if (has_glob(part)) {
    for (const std::string& name : list_dir(dir.get())) {
      if (::fnmatch(part.c_str(), name.c_str(), FNM_PERIOD) == 0) names.push_back(name);
    }
  } else {
    names.push_back(part);
  }
  const bool last = index + 1 == parts.size();
  for (const std::string& name : names) {
    if (name == ".git" || name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (fence.blocks(st)) continue;
    const std::string rel = prefix.empty() ? name : prefix + "/" + name;
    if (last) {
      if (!folders_only || S_ISDIR(st.st_mode)) out.push_back(rel);
    } else if (S_ISDIR(st.st_mode)) {
      expand(top, parts, index + 1, rel, folders_only, fence, out);
    }
  }
}

struct Copier {
  std::string source_top;  // realpath
  std::string repo_top;    // the user's checkout (realpath)
  std::string dest_top;
  const std::set<std::string>* tracked = nullptr;
  Fence fence;
  CopyLimits limits;
  std::uint64_t bytes_written = 0;  // data copied (not shared by reflink)
  PrepReport* report = nullptr;

  // Where a link copied to `rel` should point.
  std::string repoint(const std::string& rel, const std::string& target) {
    auto into_dest = [&](const std::string& absolute) -> std::optional<std::string> {
      for (const std::string* top : {&source_top, &repo_top}) {
        if (absolute == *top) return dest_top;
        if (absolute.rfind(*top + "/", 0) == 0) return dest_top + absolute.substr(top->size());
      }
      return std::nullopt;
    };
    if (!target.empty() && target.front() == '/') {
      const std::string normal = fs::path(target).lexically_normal().string();
      if (auto mapped = into_dest(normal)) {
        report->symlinks_repointed += 1;
        return *mapped;
      }
      return target;
    }
    // Relative: fine while it stays inside the copied tree's top.
    const fs::path parent = fs::path(rel).parent_path();
    const std::string inside = (parent / target).lexically_normal().string();
    if (inside != ".." && inside.rfind("../", 0) != 0) return target;
    const std::string absolute = (fs::path(source_top) / parent / target).lexically_normal();
    report->symlinks_repointed += 1;
    if (auto mapped = into_dest(absolute)) return *mapped;
    return absolute;
  }

  // Makes room for `name` in `dir` unless a tracked path is there.
  bool make_room(int dir, const std::string& name, bool for_folder) {
    if (name == ".git") return false;
    struct stat st {};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return true;
    if (for_folder && S_ISDIR(st.st_mode)) return true;
    if (S_ISDIR(st.st_mode)) {
      note(*report, "a folder is in the way of a file; left as it is");
      return false;
    }
    return ::unlinkat(dir, name.c_str(), 0) == 0;
  }

  // Fails when copying `size` more bytes would pass the copy limit or leave
  // the worktree's file system with less than the reserve free.
  Result<void> check_room(int dst_dir, const std::string& rel, std::uint64_t size) {
    constexpr std::uint64_t kMiB = 1024 * 1024;
    auto amount = [&](std::uint64_t bytes) {
      return bytes >= kMiB ? std::to_string(bytes / kMiB) + " MiB"
                           : std::to_string(bytes) + " bytes";
    };
    if (bytes_written + size > limits.max_bytes) {
      return make_error(
          errc::too_large,
          "the files brought into the worktree pass " + amount(limits.max_bytes) + " at " + rel,
          "narrow [worktrees] include (or what the parent loop's worktree "
          "holds), or raise [worktrees] copy_limit_mb in loopr.toml");
    }
    struct statvfs fs_info {};
    if (::fstatvfs(dst_dir, &fs_info) != 0) return {};
    const std::uint64_t total = std::uint64_t{fs_info.f_blocks} * fs_info.f_frsize;
    const std::uint64_t free_bytes = std::uint64_t{fs_info.f_bavail} * fs_info.f_frsize;
    const std::uint64_t reserve = limits.min_free_bytes != 0
                                      ? limits.min_free_bytes
                                      : std::min<std::uint64_t>(1024 * kMiB, total / 20);
    if (free_bytes < size || free_bytes - size < reserve) {
      return make_error(errc::too_large,
                        "copying " + rel + " into the worktree would leave less than " +
                            amount(reserve) + " free on its file system (" + amount(free_bytes) +
                            " free)",
                        "free some space, or narrow [worktrees] include");
    }
    return {};
  }

  // Copies bytes [from, to) of `in` to the same offsets of `out`, at most
  // kChunk at a time, each chunk charged to the limits before it is written
  // (check_room): whatever the file system does with holes, no copy passes
  // them. Chunks of zeros read by the fallback stay holes. Returns the
  // offset reached: short of `to` when the file ended sooner (it shrank).
  Result<off_t> copy_range(int in, int out, off_t from, off_t to, int dst_dir,
                           const std::string& rel) {
    constexpr off_t kChunk = 8 * 1024 * 1024;
    off_t in_at = from, out_at = from;
    bool kernel_copy = true;
    std::vector<char> buffer;
    while (in_at < to) {
      const off_t chunk = std::min(to - in_at, kChunk);
      if (Result<void> room = check_room(dst_dir, rel, static_cast<std::uint64_t>(chunk)); !room) {
        return std::move(room).error();
      }
      if (kernel_copy) {
        const ssize_t n =
            ::copy_file_range(in, &in_at, out, &out_at, static_cast<size_t>(chunk), 0);
        if (n > 0) {
          bytes_written += static_cast<std::uint64_t>(n);
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP) {
          return errno_error(errno, "copy", dest_top + "/" + rel);
        }
        // Not offered here, or 0 before the end (the file shrank, or a file
        // system that answers 0 wrongly): plain reads tell which.
        kernel_copy = false;
        continue;
      }
      buffer.resize(static_cast<std::size_t>(chunk));
      const ssize_t got = ::pread(in, buffer.data(), buffer.size(), in_at);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return errno_error(errno, "read", source_top + "/" + rel);
      if (got == 0) return in_at;  // the file ended here
      const bool zeros =
          std::all_of(buffer.begin(), buffer.begin() + got, [](char c) { return c == '\0'; });
      for (ssize_t done = 0; done < got && !zeros;) {
        const ssize_t w =
            ::pwrite(out, buffer.data() + done, static_cast<size_t>(got - done), out_at + done);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return errno_error(errno, "write", dest_top + "/" + rel);
        done += w;
      }
      if (!zeros) bytes_written += static_cast<std::uint64_t>(got);
      in_at += got;
      out_at += got;
    }
    return in_at;
  }

  // A copy that keeps holes: only the data extents are copied (SEEK_DATA,
  // SEEK_HOLE), so a sparse file costs what it holds, not its size. A file
  // that shrinks meanwhile is copied as far as it went.
  Result<void> copy_sparse(int in, int out, off_t size, int dst_dir, const std::string& rel) {
    off_t at = 0;
    off_t end = size;
    while (at < size) {
      const off_t data = ::lseek(in, at, SEEK_DATA);
      if (data < 0 && errno == ENXIO) break;  // only a hole is left
      off_t from = data, to = size;
      if (data >= 0) {
        to = ::lseek(in, data, SEEK_HOLE);
        if (to <= data || to > size) to = size;
      } else {
        from = at;  // no SEEK_DATA here: all of it
      }
      Result<off_t> reached = copy_range(in, out, from, to, dst_dir, rel);
      if (!reached) return std::move(reached).error();
      if (*reached < to) {
        end = *reached;
        break;
      }
      at = to;
    }
    if (::ftruncate(out, end) != 0) return errno_error(errno, "size", dest_top + "/" + rel);
    return {};
  }

  Result<void> copy_file(int src_dir, int dst_dir, const std::string& name,
                         const std::string& rel) {
    UniqueFd in(
        ::openat(src_dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
    if (!in) {  // gone or unreadable meanwhile: the rest is still worth having
      note(*report,
           rel + ": cannot be read (" + std::string(std::strerror(errno)) + "); not copied");
      return {};
    }
    struct stat now {};
    if (::fstat(in.get(), &now) != 0 || !S_ISREG(now.st_mode)) return {};
    if (!make_room(dst_dir, name, false)) return {};
    UniqueFd out(::openat(dst_dir, name.c_str(),
                          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!out) return errno_error(errno, "create", dest_top + "/" + rel);
    if (::ioctl(out.get(), FICLONE, in.get()) == 0) {
      report->reflinked += 1;
    } else {
      // First what the source holds (less than its size when it is
      // sparse), so a file that cannot fit is not begun; then each chunk
      // as it is written (copy_range).
      const std::uint64_t held = std::min<std::uint64_t>(
          static_cast<std::uint64_t>(now.st_size), 512 * static_cast<std::uint64_t>(now.st_blocks));
      Result<void> copied = check_room(dst_dir, rel, held);
      if (copied) copied = copy_sparse(in.get(), out.get(), now.st_size, dst_dir, rel);
      if (!copied) {  // no half-copied file is left behind
        ::unlinkat(dst_dir, name.c_str(), 0);
        return copied;
      }
    }
    ::fchmod(out.get(), now.st_mode & 0777 & ~static_cast<mode_t>(S_ISUID | S_ISGID));
    const struct timespec times[2] = {now.st_atim, now.st_mtim};
    ::futimens(out.get(), times);
    report->files += 1;
    report->bytes += static_cast<std::uint64_t>(now.st_size);
    return {};
  }

  Result<void> copy_entry(int src_dir, int dst_dir, const std::string& name, const std::string& rel,
                          int depth) {
    if (depth > kMaxDepth) {
      note(*report, rel + ": deeper than " + std::to_string(kMaxDepth) + " folders; not copied");
      return {};
    }
    // A nested repository's .git (a dependency cloned into node_modules)
    // is not needed to build, and a .git file in a worktree would point git
    // elsewhere.
    if (name == ".git" || name == "." || name == "..") return {};
    struct stat st {};
    if (::fstatat(src_dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return {};
    if (tracked->count(rel) != 0) {
      report->skipped_tracked += 1;
      return {};
    }
    if (S_ISDIR(st.st_mode)) {
      // The worktree itself, and the folder of all loops' worktrees (when
      // it lies inside the checkout): never copied into a worktree.
      if (fence.blocks(st)) return {};
      UniqueFd from = open_dir_at(src_dir, name);
      struct stat opened {};  // what was opened, not what the name was a moment ago
      if (!from || ::fstat(from.get(), &opened) != 0 || fence.blocks(opened)) return {};
      if (!make_room(dst_dir, name, true)) return {};
      if (::mkdirat(dst_dir, name.c_str(), 0700) != 0 && errno != EEXIST) {
        return errno_error(errno, "create", dest_top + "/" + rel);
      }
      UniqueFd to = open_dir_at(dst_dir, name);
      if (!to) {
        note(*report, rel + ": the worktree holds something else there; not copied");
        return {};
      }
      for (const std::string& child : list_dir(from.get())) {
        auto copied = copy_entry(from.get(), to.get(), child, rel + "/" + child, depth + 1);
        if (!copied) return copied;
      }
      ::fchmod(to.get(), (st.st_mode & 0777) | S_IRWXU);
      const struct timespec times[2] = {st.st_atim, st.st_mtim};
      ::futimens(to.get(), times);
      return {};
    }
    if (S_ISLNK(st.st_mode)) {
      std::string target(static_cast<std::size_t>(std::max<off_t>(st.st_size, 0)) + 1, '\0');
      const ssize_t n = ::readlinkat(src_dir, name.c_str(), target.data(), target.size());
      if (n < 0) return {};
      target.resize(static_cast<std::size_t>(n));
      const std::string pointed = repoint(rel, target);
      if (!make_room(dst_dir, name, false)) return {};
      if (::symlinkat(pointed.c_str(), dst_dir, name.c_str()) != 0) {
        return errno_error(errno, "create the link", dest_top + "/" + rel);
      }
      const struct timespec times[2] = {st.st_atim, st.st_mtim};
      ::utimensat(dst_dir, name.c_str(), times, AT_SYMLINK_NOFOLLOW);
      report->symlinks += 1;
      return {};
    }
    if (S_ISREG(st.st_mode)) return copy_file(src_dir, dst_dir, name, rel);
    report->skipped_special += 1;
    return {};
  }

  // Copies `rel` (a path beneath the source's top), making its parent
  // folders in the worktree as needed.
  Result<void> copy_path(int src_top, int dst_top, const std::string& rel) {
    const fs::path path(rel);
    const std::string parent = path.parent_path().string();
    UniqueFd src_parent = open_dir_beneath(src_top, parent, &fence);
    if (!src_parent) return {};
    UniqueFd dst_parent(::fcntl(dst_top, F_DUPFD_CLOEXEC, 0));
    for (const std::string& part : split_path(parent)) {
      if (::mkdirat(dst_parent.get(), part.c_str(), 0700) != 0 && errno != EEXIST) {
        return errno_error(errno, "create", dest_top + "/" + parent);
      }
      dst_parent = open_dir_at(dst_parent.get(), part);
      if (!dst_parent) {
        note(*report, rel + ": its folder in the worktree is not a folder; not copied");
        return {};
      }
    }
    return copy_entry(src_parent.get(), dst_parent.get(), path.filename().string(), rel, 0);
  }
};

GitRunOptions read_only() {
  GitRunOptions options;
  options.read_only = true;
  return options;
}

// The worktree on `branch` of the repository, if there is one.
std::optional<WorktreeInfo> worktree_on(const std::string& repo_top, const std::string& branch) {
  auto repo = open_repo(repo_top);
  if (!repo) return std::nullopt;
  auto git = repo_git(*repo);
  if (!git) return std::nullopt;
  auto listed = git->output({"worktree", "list", "--porcelain", "-z"}, read_only());
  if (!listed) return std::nullopt;
  std::string path;
  for (std::string_view record : split_nul(*listed)) {
    if (record.rfind("worktree ", 0) == 0) path = record.substr(9);
    if (record == "branch refs/heads/" + branch && !path.empty()) {
      auto info = open_worktree(repo_top, path, branch);
      if (info) return *info;
    }
  }
  return std::nullopt;
}

bool same_bytes(int a, int b, off_t size) {
  char x[65536], y[65536];
  off_t at = 0;
  while (at < size) {
    const ssize_t n = ::pread(a, x, sizeof x, at);
    if (n <= 0) return false;
    if (::pread(b, y, static_cast<size_t>(n), at) != n) return false;
    if (std::memcmp(x, y, static_cast<size_t>(n)) != 0) return false;
    at += n;
  }
  return true;
}

UniqueFd open_file_beneath(int top, const std::string& rel) {
  const fs::path path(rel);
  UniqueFd dir = open_dir_beneath(top, path.parent_path().string());
  if (!dir) return dir;
  return UniqueFd(::openat(dir.get(), path.filename().c_str(),
                           O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
}

// Tracked files whose bytes equal the source's get the source's mtime.
void align_mtimes(int src_top, int dst_top, const std::set<std::string>& tracked,
                  PrepReport& report) {
  for (const std::string& rel : tracked) {
    UniqueFd ours = open_file_beneath(dst_top, rel);
    if (!ours) continue;
    UniqueFd theirs = open_file_beneath(src_top, rel);
    if (!theirs) continue;
    struct stat a {
    }, b{};
    if (::fstat(ours.get(), &a) != 0 || ::fstat(theirs.get(), &b) != 0) continue;
    if (!S_ISREG(a.st_mode) || !S_ISREG(b.st_mode) || a.st_size != b.st_size) continue;
    if (a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec) continue;
    if (!same_bytes(ours.get(), theirs.get(), a.st_size)) continue;
    const struct timespec times[2] = {a.st_atim, b.st_mtim};
    if (::futimens(ours.get(), times) == 0) report.mtimes_aligned += 1;
  }
}

bool path_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.' || c == '+' || c == '~';
}

// `text` with each whole occurrence of the path `from` (not a prefix of a
// longer name, not the tail of a longer path) replaced by `to`.
std::size_t replace_path(std::string& text, const std::string& from, const std::string& to) {
  std::size_t count = 0;
  std::string out;
  std::size_t at = 0;
  for (;;) {
    const std::size_t hit = text.find(from, at);
    if (hit == std::string::npos) break;
    const std::size_t end = hit + from.size();
    const bool starts = hit == 0 || (!path_char(text[hit - 1]) && text[hit - 1] != '/');
    const bool ends = end == text.size() || !path_char(text[end]);
    if (starts && ends) {
      out.append(text, at, hit - at);
      out += to;
      count += 1;
    } else {
      out.append(text, at, end - at);
    }
    at = end;
  }
  if (count == 0) return 0;
  out.append(text, at, std::string::npos);
  text = std::move(out);
  return count;
}

template <typename T>
bool read_at(const std::string& data, std::uint64_t at, T& out) {
  if (at > data.size() || data.size() - at < sizeof(T)) return false;
  std::memcpy(&out, data.data() + at, sizeof(T));
  return true;
}

enum class Runpath {
  not_named,    // read, and no RUNPATH/RPATH entry names `from`
  repointed,    // every entry naming `from` now names the worktree
  cannot_move,  // an entry names `from` and its new value does not fit, or
                // the file is not an ELF64 little-endian one this can read
};

// An ELF64 little-endian executable or shared library (`data`, in folder
// `rel_dir` of the worktree `to`) whose DT_RUNPATH/DT_RPATH names `from`:
// each such entry becomes "$ORIGIN/<relative path>" to the same place in
// the worktree, written over the old string in place (padded with NULs).
Runpath repoint_runpath(std::string& data, const std::string& from, const std::string& to,
                        const std::string& rel_dir) {
  constexpr Runpath kUnread = Runpath::cannot_move;
  if (data.size() < 64 || data[4] != 2 || data[5] != 1) return kUnread;  // ELF64, little-endian
  std::uint64_t phoff = 0;
  std::uint16_t phentsize = 0, phnum = 0;
  if (!read_at(data, 32, phoff) || !read_at(data, 54, phentsize) || !read_at(data, 56, phnum))
    return kUnread;
  struct Load {
    std::uint64_t vaddr, offset, filesz;
  };
  std::vector<Load> loads;
  std::uint64_t dyn_off = 0, dyn_size = 0;
  for (std::uint16_t i = 0; i < phnum; ++i) {
    const std::uint64_t at = phoff + std::uint64_t{i} * phentsize;
    std::uint32_t type = 0;
    std::uint64_t offset = 0, vaddr = 0, filesz = 0;
    if (!read_at(data, at, type) || !read_at(data, at + 8, offset) ||
        !read_at(data, at + 16, vaddr) || !read_at(data, at + 32, filesz))
      return kUnread;
    if (type == 1) loads.push_back({vaddr, offset, filesz});
    if (type == 2) dyn_off = offset, dyn_size = filesz;
  }
  if (dyn_size == 0) return Runpath::not_named;  // static: no RUNPATH
  std::uint64_t strtab = 0;
  std::vector<std::uint64_t> paths;  // offsets in the string table
  for (std::uint64_t at = dyn_off; at + 16 <= dyn_off + dyn_size; at += 16) {
    std::int64_t tag = 0;
    std::uint64_t value = 0;
    if (!read_at(data, at, tag) || !read_at(data, at + 8, value)) return kUnread;
    if (tag == 0) break;
    if (tag == 5) strtab = value;                        // DT_STRTAB (an address)
    if (tag == 15 || tag == 29) paths.push_back(value);  // DT_RPATH, DT_RUNPATH
  }
  if (paths.empty()) return Runpath::not_named;
  std::uint64_t strtab_off = 0;
  bool mapped = false;
  for (const Load& load : loads) {
    if (strtab >= load.vaddr && strtab < load.vaddr + load.filesz) {
      strtab_off = strtab - load.vaddr + load.offset;
      mapped = true;
    }
  }
  if (!mapped) return kUnread;
  bool changed = false;
  for (const std::uint64_t offset : paths) {
    const std::uint64_t at = strtab_off + offset;
    if (at >= data.size()) return kUnread;
    const std::size_t end = data.find('\0', at);
    if (end == std::string::npos) return kUnread;
    const std::string old_value = data.substr(at, end - at);
    std::string new_value;
    bool any = false;
    for (const std::string& entry : split_path_list(old_value)) {
      std::string out = entry;
      if (entry == from || entry.rfind(from + "/", 0) == 0) {
        const fs::path target = fs::path(to + entry.substr(from.size()));
        const fs::path origin = fs::path(to) / rel_dir;
        const std::string relative = target.lexically_relative(origin).string();
        out = relative.empty() || relative == "." ? "$ORIGIN" : "$ORIGIN/" + relative;
        any = true;
      }
      new_value += (new_value.empty() ? "" : ":") + out;
    }
    if (!any) continue;
    if (new_value.size() > old_value.size()) return Runpath::cannot_move;
    std::memcpy(data.data() + at, new_value.data(), new_value.size());
    std::memset(data.data() + at + new_value.size(), 0, old_value.size() - new_value.size());
    changed = true;
  }
  return changed ? Runpath::repointed : Runpath::not_named;
}

// Rewrites `from` to `to` in the text files beneath `dir`, mtimes kept.
void relocate_dir(int dir, const std::string& rel, const std::string& from, const std::string& to,
                  int depth, PrepReport& report) {
  if (depth > kMaxDepth) return;
  for (const std::string& name : list_dir(dir)) {
    struct stat st {};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      UniqueFd sub = open_dir_at(dir, name);
      if (sub) relocate_dir(sub.get(), rel + "/" + name, from, to, depth + 1, report);
      continue;
    }
    if (!S_ISREG(st.st_mode) || st.st_size == 0 || st.st_size > kMaxRelocatedFile) continue;
    UniqueFd file(
        ::openat(dir, name.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
    struct stat opened {};
    if (!file || ::fstat(file.get(), &opened) != 0 || !S_ISREG(opened.st_mode)) continue;
    std::string text(static_cast<std::size_t>(st.st_size), '\0');
    if (::pread(file.get(), text.data(), text.size(), 0) != st.st_size) continue;
    if (text.find(from) == std::string::npos) continue;
    if (text.find('\0') != std::string::npos) {
      // Binary. An executable or shared library whose RUNPATH names the
      // old path (the checkout's build folder, out of the sandbox's sight)
      // is re-pointed, or removed where that does not fit, so the build
      // links it again (cheap: no compiling); one that names it elsewhere
      // (debug info, a string) is kept. Object files (debug info) are
      // harmless to a build and kept; Ninja's dependency log cannot be
      // rewritten (said).
      const bool elf = text.size() > 18 && text.compare(0, 4,
                                                        "\x7f"
                                                        "ELF") == 0;
      const int elf_type = elf ? static_cast<unsigned char>(text[16]) : 0;
      if (elf && (elf_type == 2 || elf_type == 3)) {
        const Runpath runpath = repoint_runpath(text, from, to, rel);
        if (runpath == Runpath::not_named) continue;
        if (runpath == Runpath::repointed && ::pwrite(file.get(), text.data(), text.size(), 0) ==
                                                 static_cast<ssize_t>(text.size())) {
          const struct timespec times[2] = {st.st_atim, st.st_mtim};
          ::futimens(file.get(), times);
          report.runpaths_rewritten += 1;
          continue;
        }
        if (::unlinkat(dir, name.c_str(), 0) == 0) report.binaries_removed += 1;
        continue;
      }
      if (name == ".ninja_deps") {
        note(report, rel + "/" + name + " is binary and names " + from +
                         ": not rewritten, so Ninja rebuilds what it lists (a Makefile "
                         "generator relocates fully; a compiler cache such as ccache keeps a "
                         "Ninja rebuild cheap)");
      }
      continue;
    }
    if (replace_path(text, from, to) == 0) continue;
    if (::ftruncate(file.get(), 0) != 0) continue;
    if (::pwrite(file.get(), text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
      note(report, rel + "/" + name + ": could not be rewritten");
      continue;
    }
    const struct timespec times[2] = {st.st_atim, st.st_mtim};
    ::futimens(file.get(), times);
    report.files_relocated += 1;
  }
}

// Copied folders that are build folders (CMake's or autotools'), up to two
// levels below an entry.
void find_build_dirs(int top, const std::string& rel, int depth, std::vector<std::string>& out) {
  UniqueFd dir = open_dir_beneath(top, rel);
  if (!dir) return;
  struct stat st {};
  if (::fstatat(dir.get(), "CMakeCache.txt", &st, AT_SYMLINK_NOFOLLOW) == 0 ||
      ::fstatat(dir.get(), "config.status", &st, AT_SYMLINK_NOFOLLOW) == 0) {
    out.push_back(rel);
    return;
  }
  if (depth >= 2) return;
  for (const std::string& name : list_dir(dir.get())) {
    if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
      find_build_dirs(top, rel + "/" + name, depth + 1, out);
    }
  }
}

}  // namespace

nlohmann::json PrepReport::to_json() const {
  nlohmann::json out = {{"source", source},
                        {"entries", entries},
                        {"files", files},
                        {"bytes", bytes},
                        {"reflinked", reflinked},
                        {"symlinks", symlinks},
                        {"symlinks_repointed", symlinks_repointed},
                        {"skipped_tracked", skipped_tracked},
                        {"mtimes_aligned", mtimes_aligned},
                        {"relocated", relocated},
                        {"files_relocated", files_relocated},
                        {"runpaths_rewritten", runpaths_rewritten},
                        {"binaries_removed", binaries_removed}};
  if (skipped_special > 0) out["skipped_special"] = skipped_special;
  if (!notes.empty()) out["notes"] = notes;
  return out;
}

Result<PrepReport> bring_into_worktree(const WorktreeInfo& dest,
                                       const std::vector<std::string>& include,
                                       const std::string& parent_branch, const CopyLimits& limits) {
  PrepReport report;
  report.source = dest.repo;
  std::vector<std::string> entries;
  std::optional<WorktreeInfo> parent;
  if (!parent_branch.empty()) parent = worktree_on(dest.repo, parent_branch);
  if (parent) {
    report.source = parent->path;
    auto git = worktree_git(*parent);
    if (!git) return std::move(git).error();
    auto listed = git->output(
        {"ls-files", "--others", "--ignored", "--exclude-standard", "--directory", "-z"},
        read_only());
    if (!listed) return std::move(listed).error();
    for (std::string_view listed_path : split_nul(*listed)) {
      std::string path(listed_path);
      while (!path.empty() && path.back() == '/')
        path.pop_back();
      if (!path.empty()) entries.push_back(path);
    }
  } else if (!parent_branch.empty()) {
    note(report, "the parent's worktree (branch " + parent_branch +
                     ") is gone: include taken from the checkout");
  }
  if (entries.empty() && include.empty()) return report;

  UniqueFd src_top(::open(report.source.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!src_top) return errno_error(errno, "open", report.source);
  UniqueFd dst_top(::open(dest.path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dst_top) return errno_error(errno, "open", dest.path);
  struct stat dest_st {};
  if (::fstat(dst_top.get(), &dest_st) != 0) return errno_error(errno, "stat", dest.path);
  Fence fence;
  fence.worktree_dev = dest_st.st_dev;
  fence.worktree = dest_st.st_ino;
  struct stat parent_st {};
  if (::fstatat(dst_top.get(), "..", &parent_st, 0) != 0) {
    return errno_error(errno, "stat", dest.path + "/..");
  }
  fence.worktrees_dev = parent_st.st_dev;
  fence.worktrees = parent_st.st_ino;

  for (std::string pattern : include) {
    const bool folders_only = !pattern.empty() && pattern.back() == '/';
    const auto parts = split_path(pattern);
    // The settings refuse these (config/repository_settings.cpp); a
    // pattern naming the top itself or a .git would reach the user's
    // repository.
    const bool reaches_out = std::any_of(parts.begin(), parts.end(), [](const std::string& part) {
      return part == ".." || part == "." || part == ".git";
    });
    if (parts.empty() || reaches_out) {
      note(report, "include \"" + pattern + "\" names the top, a .git or a parent: not copied");
      continue;
    }
    std::vector<std::string> matched;
    expand(src_top.get(), parts, 0, "", folders_only, fence, matched);
    if (matched.empty()) note(report, "include \"" + pattern + "\" matches nothing");
    entries.insert(entries.end(), matched.begin(), matched.end());
  }
  std::sort(entries.begin(), entries.end());
  entries.erase(std::unique(entries.begin(), entries.end()), entries.end());
  // A path beneath another one listed is copied with it.
  // (Sorted, "a" "a-b" "a/c": "a/c" is beneath "a", not the last one kept.)
  std::vector<std::string> tops;
  std::set<std::string> kept;
  for (const std::string& entry : entries) {
    if (entry == ".git" || entry.rfind(".git/", 0) == 0) continue;
    bool beneath = false;
    for (std::size_t slash = entry.find('/'); slash != std::string::npos && !beneath;
         slash = entry.find('/', slash + 1)) {
      beneath = kept.count(entry.substr(0, slash)) != 0;
    }
    if (beneath) continue;
    kept.insert(entry);
    tops.push_back(entry);
  }
  report.entries = tops;

  auto git = worktree_git(dest);
  if (!git) return std::move(git).error();
  auto listed = git->output({"ls-files", "-z"}, read_only());
  if (!listed) return std::move(listed).error();
  const auto tracked_list = split_nul(*listed);
  const std::set<std::string> tracked(tracked_list.begin(), tracked_list.end());

  Copier copier;
  copier.source_top = report.source;
  copier.repo_top = dest.repo;
  copier.dest_top = dest.path;
  copier.tracked = &tracked;
  copier.fence = fence;
  copier.limits = limits;
  copier.report = &report;
  for (const std::string& entry : tops) {
    auto copied = copier.copy_path(src_top.get(), dst_top.get(), entry);
    if (!copied) return std::move(copied).error();
  }
  if (tops.empty()) return report;

  align_mtimes(src_top.get(), dst_top.get(), tracked, report);

  std::vector<std::string> build_dirs;
  for (const std::string& entry : tops)
    find_build_dirs(dst_top.get(), entry, 0, build_dirs);
  for (const std::string& rel : build_dirs) {
    UniqueFd dir = open_dir_beneath(dst_top.get(), rel);
    if (!dir) continue;
    const std::uint64_t before = report.files_relocated;
    relocate_dir(dir.get(), rel, report.source, dest.path, 0, report);
    if (report.files_relocated > before) report.relocated.push_back(rel);
  }
  return report;
}

}  // namespace loopr::loops
