#include "common/private_folder.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

namespace loopr {

Result<void> make_private_folders(const std::string& path) {
  if (path.empty()) {
    return make_error(errc::invalid_arguments, "the folder path is empty",
                      "pass an absolute folder path");
  }
  const std::filesystem::path target = std::filesystem::path(path).lexically_normal();
  std::filesystem::path current;
  for (const std::filesystem::path& part : target) {
    current /= part;
    if (::mkdir(current.c_str(), 0700) != 0 && errno != EEXIST) {
      return errno_error(errno, "create the folder", current.string());
    }
  }
  struct stat info {};
  if (::stat(target.c_str(), &info) != 0) return errno_error(errno, "stat", target.string());
  if (!S_ISDIR(info.st_mode)) {
    return make_error(errc::not_directory, target.string() + " exists and is not a folder",
                      "remove that file or choose another folder");
  }
  return {};
}

Result<void> require_private_folder(const std::string& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return errno_error(errno, "inspect the folder", path);
  if (S_ISLNK(info.st_mode)) {
    return make_error(errc::protected_path, path + " is a symbolic link, not a folder",
                      "point loopr at the real folder, or remove the link");
  }
  if (!S_ISDIR(info.st_mode)) {
    return make_error(errc::not_directory, path + " is not a folder",
                      "remove that file or choose another folder");
  }
  if (info.st_uid != ::geteuid()) {
    return make_error(errc::protected_path,
                      "the folder " + path + " belongs to uid " + std::to_string(info.st_uid) +
                          ", not to you (uid " + std::to_string(::geteuid()) + ")",
                      "someone may be trying to intercept loopr: remove the folder, or choose "
                      "another place");
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return make_error(errc::protected_path,
                      "the folder " + path +
                          " is writable by other users, who could replace what loopr keeps there",
                      "run `chmod go-w " + path + "`, or choose a private folder");
  }
  return {};
}

}  // namespace loopr
