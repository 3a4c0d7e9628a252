#include "runner/set_id_sweep.hpp"

#include <ftw.h>
#include <sys/stat.h>

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

}  // namespace loopr::runner
