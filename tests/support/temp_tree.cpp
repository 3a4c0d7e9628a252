#include "tests/support/temp_tree.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tests/support/spawn_and_drain.hpp"

namespace loopr::test {
namespace fs = std::filesystem;

TempTree::TempTree() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/loopr-test-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  char resolved[PATH_MAX];
  if (::realpath(pattern.c_str(), resolved) == nullptr) throw std::runtime_error("realpath");
  root_ = resolved;
}

TempTree::~TempTree() {
  std::error_code ignored;
  // Make everything writable again first (tests may chmod things away).
  for (auto it = fs::recursive_directory_iterator(root_, ignored);
       it != fs::recursive_directory_iterator(); it.increment(ignored)) {
    if (it->is_directory(ignored) && !it->is_symlink(ignored)) {
      fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ignored);
    }
  }
  fs::remove_all(root_, ignored);
}

std::string TempTree::path(std::string_view relative) const {
  return root_ + "/" + std::string(relative);
}

void TempTree::write(std::string_view relative, std::string_view content) const {
  const fs::path target = path(relative);
  fs::create_directories(target.parent_path());
  std::ofstream out(target, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  if (!out) ADD_FAILURE() << "cannot write " << target;
}

std::string TempTree::read(std::string_view relative) const {
  std::ifstream in(path(relative), std::ios::binary);
  if (!in) {
    ADD_FAILURE() << "cannot read " << path(relative);
    return {};
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

bool TempTree::exists(std::string_view relative) const {
  struct stat st {};
  return ::lstat(path(relative).c_str(), &st) == 0;
}

void TempTree::mkdir(std::string_view relative) const {
  fs::create_directories(path(relative));
}

void TempTree::symlink(std::string_view target, std::string_view relative) const {
  const fs::path link = path(relative);
  fs::create_directories(link.parent_path());
  if (::symlink(std::string(target).c_str(), link.c_str()) != 0) {
    ADD_FAILURE() << "cannot create symlink " << link;
  }
}

std::string bin_path(std::string_view name) {
  const char* dir = std::getenv("LOOPR_BIN_DIR");
  return std::string(dir && *dir ? dir : "build/bin") + "/" + std::string(name);
}

ToolRun run_tool_binary(std::string_view binary_name, std::string_view tool,
                        const std::string& worktree, std::string_view stdin_text) {
  SpawnOptions options;
  options.stdin_text = std::string(stdin_text);
  SpawnedRun spawned =
      spawn_and_drain(bin_path(binary_name), {std::string(tool), "--worktree", worktree}, options);
  ToolRun run;
  run.exit_code = spawned.exit_code;
  run.stdout_text = std::move(spawned.out);
  run.stderr_text = std::move(spawned.err);
  run.output = nlohmann::json::parse(run.stdout_text, nullptr, false);
  if (run.output.is_discarded()) run.output = nullptr;
  return run;
}

ToolRun run_loopr_tool(std::string_view tool, const std::string& worktree,
                       std::string_view stdin_text) {
  return run_tool_binary("loopr-tool", tool, worktree, stdin_text);
}

ToolRun run_loopr_tool(std::string_view tool, const std::string& worktree,
                       const nlohmann::json& args) {
  return run_loopr_tool(tool, worktree, std::string_view(args.dump()));
}

}  // namespace loopr::test
