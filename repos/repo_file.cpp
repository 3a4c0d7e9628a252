#include "repos/repo_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "store/store.hpp"

namespace loopr::repos {

namespace {

std::string describe_errno(int err) {
  return std::strerror(err);
}

}  // namespace

RepoFile read_repo_file(const std::string& repo) {
  RepoFile file;
  const std::string folder = repo == "/" ? "/.loopr" : repo + "/.loopr";
  file.path = folder + "/loopr.toml";

  const UniqueFd top(::open(repo.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!top) {
    file.exists = true;
    file.error = "cannot open the repository folder " + repo + ": " + describe_errno(errno);
    return file;
  }
  struct stat info {};
  if (::fstatat(top.get(), ".loopr", &info, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return file;
    file.exists = true;
    file.error = "cannot look at " + folder + ": " + describe_errno(errno);
    return file;
  }
  if (S_ISLNK(info.st_mode)) {
    file.exists = true;
    file.error = folder +
                 " is a symbolic link: loopr reads a repository's settings only from a real "
                 ".loopr folder inside it, never through a link that could point anywhere";
    return file;
  }
  if (!S_ISDIR(info.st_mode)) return file;  // a file named .loopr holds no settings
  // O_NOFOLLOW: a link swapped in since the fstatat is refused (ELOOP).
  const UniqueFd dir(
      ::openat(top.get(), ".loopr", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) {
    file.exists = true;
    file.error = "cannot open " + folder + ": " + describe_errno(errno);
    return file;
  }
  const UniqueFd fd(
      ::openat(dir.get(), "loopr.toml", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd) {
    const int err = errno;
    if (err == ENOENT) return file;
    file.exists = true;
    if (err == ELOOP) {
      file.error = file.path +
                   " is a symbolic link: loopr reads a repository's settings only from a "
                   "regular file inside it, never through a link that could point anywhere";
    } else {
      file.error = "cannot open " + file.path + ": " + describe_errno(err);
    }
    return file;
  }
  file.exists = true;
  if (::fstat(fd.get(), &info) != 0) {
    file.error = "cannot look at " + file.path + ": " + describe_errno(errno);
    return file;
  }
  if (!S_ISREG(info.st_mode)) {
    file.error = file.path + " is not a regular file";
    return file;
  }
  if (static_cast<std::uint64_t>(info.st_size) > config::kMaxRepoFileBytes) {
    file.error = file.path + " is " + std::to_string(info.st_size) + " bytes, over the " +
                 std::to_string(config::kMaxRepoFileBytes) +
                 " loopr reads: a repository's settings are a few lines";
    return file;
  }
  // One byte more than the cap: a file that grew since the fstat is refused.
  std::string bytes(config::kMaxRepoFileBytes + 1, '\0');
  std::size_t have = 0;
  while (have < bytes.size()) {
    const ssize_t n = ::read(fd.get(), bytes.data() + have, bytes.size() - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      file.error = "cannot read " + file.path + ": " + describe_errno(errno);
      return file;
    }
    if (n == 0) break;
    have += static_cast<std::size_t>(n);
  }
  if (have > config::kMaxRepoFileBytes) {
    file.error = file.path + " is over the " + std::to_string(config::kMaxRepoFileBytes) +
                 " bytes loopr reads: a repository's settings are a few lines";
    return file;
  }
  bytes.resize(have);
  file.hash = store::sha256_digest(bytes);
  try {
    std::istringstream in(bytes);
    file.settings = config::parse_repository_file(in, file.path);
  } catch (const ConfigError& e) {
    file.error = e.what();
  }
  return file;
}

bool repo_file_present(const std::string& repo) {
  const UniqueFd top(::open(repo.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!top) return true;  // read_repo_file reports it as a file it cannot use
  struct stat info {};
  if (::fstatat(top.get(), ".loopr", &info, AT_SYMLINK_NOFOLLOW) != 0) return errno != ENOENT;
  if (S_ISLNK(info.st_mode)) return true;
  if (!S_ISDIR(info.st_mode)) return false;
  const UniqueFd dir(::openat(top.get(), ".loopr", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) return true;
  return ::fstatat(dir.get(), "loopr.toml", &info, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT;
}

}  // namespace loopr::repos
