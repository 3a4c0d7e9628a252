#include "client/tui_command.hpp"

#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <vector>

namespace loopr::client {

int run_tui(const CommandContext& context, const std::string& repo) {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return context.fail(errno_error(errno, "readlink", "/proc/self/exe"));
  const std::string tui =
      (std::filesystem::path(std::string(self, static_cast<std::size_t>(n))).parent_path() /
       "loopr-tui")
          .string();
  std::vector<std::string> args = {tui, "--socket", context.paths.socket_path};
  if (!context.path_flags.config_dir.empty()) {
    args.push_back("--config-dir");
    args.push_back(context.path_flags.config_dir);
  }
  if (!repo.empty()) {
    args.push_back("--repo");
    args.push_back(repo);
  }
  std::vector<char*> argv;
  for (auto& arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  context.out.flush();
  ::execv(tui.c_str(), argv.data());
  return context.fail(make_error(errc::not_found,
                                 "cannot run loopr-tui at " + tui + ": " + std::strerror(errno),
                                 "looprctl runs the loopr-tui installed next to it; build the "
                                 "loopr-tui target or run loopr-tui directly"));
}

}  // namespace loopr::client
