#include "client/tui_command.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ostream>
#include <vector>

#include "client/daemon_process.hpp"

namespace loopr::client {

int run_tui(const CommandContext& context, const std::string& repo) {
  auto located = sibling_executable("loopr-tui");
  if (!located) return context.fail(located.error());
  const std::string tui = *located;
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
