#include "loopr-tool/atomic_write.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <random>

namespace loopr::tool {
namespace {

mode_t default_file_mode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

Result<void> write_all(int fd, std::string_view content, const std::string& shown) {
  while (!content.empty()) {
    const ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_error(errno, "cannot write", shown);
    content.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

}  // namespace

Result<std::optional<struct stat>> existing_regular_file(const ParentDir& parent) {
  struct stat st {};
  if (::fstatat(parent.dir.get(), parent.leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return std::optional<struct stat>();
    return errno_error(errno, "cannot stat", parent.relative);
  }
  if (S_ISLNK(st.st_mode)) {
    char target[PATH_MAX];
    const ssize_t n =
        ::readlinkat(parent.dir.get(), parent.leaf.c_str(), target, sizeof target - 1);
    const std::string shown = n > 0 ? std::string(target, static_cast<std::size_t>(n)) : "?";
    return make_error(errc::invalid_arguments,
                      "'" + parent.relative + "' is a symlink to '" + shown + "'",
                      "write the file it points to (resolved from the symlink's folder) instead; "
                      "tools do not write through symlinks");
  }
  if (S_ISDIR(st.st_mode)) {
    return make_error(errc::is_directory, "'" + parent.relative + "' is a directory",
                      "give the path of a file");
  }
  if (!S_ISREG(st.st_mode)) {
    return make_error(errc::invalid_arguments,
                      "'" + parent.relative + "' is not a regular file (a device, fifo or socket)",
                      "only regular files can be written");
  }
  return std::optional<struct stat>(st);
}

Result<void> atomic_replace(const ParentDir& parent, std::string_view content,
                            const std::optional<struct stat>& existing) {
  std::random_device entropy;
  std::string temp_name;
  UniqueFd temp;
  for (int attempt = 0; attempt < 16 && !temp; ++attempt) {
    temp_name = "." + parent.leaf.substr(0, 200) + ".loopr-" + std::to_string(entropy() % 1000000);
    temp.reset(::openat(parent.dir.get(), temp_name.c_str(),
                        O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!temp && errno != EEXIST)
      return errno_error(errno, "cannot create a file beside", parent.relative);
  }
  if (!temp) return errno_error(EEXIST, "cannot create a temporary file beside", parent.relative);

  const auto cleanup = [&] { ::unlinkat(parent.dir.get(), temp_name.c_str(), 0); };
  if (auto r = write_all(temp.get(), content, parent.relative); !r) {
    cleanup();
    return r;
  }
  const mode_t mode = existing ? (existing->st_mode & 07777) : default_file_mode();
  if (::fchmod(temp.get(), mode) != 0) {
    const int err = errno;
    cleanup();
    return errno_error(err, "cannot set the mode of", parent.relative);
  }
  if (existing && ::geteuid() == 0) {
    // Best effort: keep the owner when running as root (a failure leaves root).
    [[maybe_unused]] const int ignored = ::fchown(temp.get(), existing->st_uid, existing->st_gid);
  }
  if (::fsync(temp.get()) != 0) {
    const int err = errno;
    cleanup();
    return errno_error(err, "cannot flush", parent.relative);
  }
  if (::renameat(parent.dir.get(), temp_name.c_str(), parent.dir.get(), parent.leaf.c_str()) != 0) {
    const int err = errno;
    cleanup();
    return errno_error(err, "cannot replace", parent.relative);
  }
  ::fsync(parent.dir.get());  // the rename is durable once the directory is
  return {};
}

Result<std::string> read_whole_file(const ParentDir& parent, std::size_t max_bytes) {
  UniqueFd fd(::openat(parent.dir.get(), parent.leaf.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) {
    if (errno == ENOENT) {
      return make_error(errc::not_found, "no such file: '" + parent.relative + "'",
                        "check the path with list_directory or glob");
    }
    return errno_error(errno, "cannot open", parent.relative);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return errno_error(errno, "cannot stat", parent.relative);
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    return make_error(errc::too_large,
                      "'" + parent.relative + "' is " + std::to_string(st.st_size) +
                          " bytes; files over " + std::to_string(max_bytes >> 20) +
                          " MiB are not edited in place",
                      "use run_command with a stream editor (sed, awk) for files this large");
  }
  std::string content;
  content.resize(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  for (;;) {
    if (done == content.size()) content.resize(done + 65536);  // the file grew meanwhile
    const ssize_t n = ::read(fd.get(), content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_error(errno, "cannot read", parent.relative);
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
    if (done > max_bytes) {
      return make_error(errc::too_large, "'" + parent.relative + "' grew past the edit limit",
                        "try again, or use run_command for very large files");
    }
  }
  content.resize(done);
  return content;
}

Result<void> refuse_git_metadata(const Worktree& worktree, const ParentDir& parent) {
  if (Worktree::is_git_metadata(parent.relative) ||
      worktree.dir_is_inside_git_metadata(parent.dir.get())) {
    return make_error(errc::protected_path,
                      "'" + parent.relative +
                          "' is inside git metadata (.git), which tools never "
                          "change",
                      "git metadata changes only through the daemon's own git operations; edit "
                      "files in the working tree instead");
  }
  return {};
}

Result<void> refuse_git_metadata_before_creating(const Worktree& worktree,
                                                 const std::string& relative) {
  std::vector<std::string> parts = split_path(relative);
  if (parts.empty()) return {};  // open_parent() refuses a path that names no file
  const std::string leaf = parts.back();
  parts.pop_back();
  for (;;) {
    std::string folder = ".";
    for (std::size_t i = 0; i < parts.size(); ++i)
      folder = i == 0 ? parts[i] : folder + "/" + parts[i];
    if (auto dir = worktree.probe(folder, O_RDONLY | O_DIRECTORY)) {
      return refuse_git_metadata(worktree, ParentDir{std::move(*dir), leaf, relative});
    }
    if (parts.empty()) return {};  // open_parent() reports why the root cannot be opened
    parts.pop_back();
  }
}

Error too_large_to_change(const std::string& relative, std::int64_t size) {
  return make_error(errc::too_large,
                    "'" + relative + "' is " + std::to_string(size >> 20) + " MiB; files over " +
                        std::to_string(kMaxEditableBytes >> 20) +
                        " MiB cannot be read whole, so they cannot be checked and changed here",
                    "change it with run_command (sed, a script), or delete it with file_delete "
                    "and write it anew");
}

}  // namespace loopr::tool
