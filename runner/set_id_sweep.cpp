#include "runner/set_id_sweep.hpp"

#include <ftw.h>
#include <sys/stat.h>

#include <array>
#include <string_view>

namespace loopr::runner {
namespace {

std::size_t g_cleared = 0;  // nftw's callback has no context; the runner is one thread

int clear_one(const char* path, const struct stat* st, int type, FTW*) {
  if ((type == FTW_F || type == FTW_D) && (st->st_mode & (S_ISUID | S_ISGID)) != 0) {
    if (::chmod(path, st->st_mode & 07777 & ~static_cast<mode_t>(S_ISUID | S_ISGID)) == 0) {
      ++g_cleared;
    }
  }
  return 0;  // keep going
}

}  // namespace

std::size_t clear_set_id_bits(const std::string& worktree) {
  g_cleared = 0;
  ::nftw(worktree.c_str(), clear_one, 16, FTW_PHYS | FTW_MOUNT);
  return g_cleared;
}

bool runs_commands(const std::string& tool) {
  constexpr std::array<std::string_view, 5> kCommandTools = {"run_command", "run_command_isolated",
                                                             "build", "test", "validate"};
  for (std::string_view name : kCommandTools) {
    if (tool == name) return true;
  }
  return false;
}

}  // namespace loopr::runner
