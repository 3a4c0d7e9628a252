// Test support: a temporary directory tree that removes itself, and a way to
// run the real loopr-tool binary on it. Hermetic: everything lives under
// $TMPDIR (default /tmp) in a fresh mkdtemp directory.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace loopr::test {

class TempTree {
 public:
  TempTree();
  ~TempTree();
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;

  // Absolute path of the tree's root (realpath'd).
  const std::string& root() const { return root_; }
  std::string path(std::string_view relative) const;

  // Writes `content` to `relative`, creating parent directories.
  void write(std::string_view relative, std::string_view content) const;
  // Reads the whole file; fails the test if it cannot.
  std::string read(std::string_view relative) const;
  bool exists(std::string_view relative) const;
  void mkdir(std::string_view relative) const;
  void symlink(std::string_view target, std::string_view relative) const;

 private:
  std::string root_;
};

struct ToolRun {
  int exit_code = -1;
  nlohmann::json output;  // stdout parsed as JSON (null if it was not JSON)
  std::string stdout_text;
  std::string stderr_text;
};

// Runs build/bin/BINARY_NAME <tool> --worktree <worktree> (loopr-tool,
// loopr-fetch) with `stdin_text` on stdin. The binary is found through
// $LOOPR_BIN_DIR (set by CTest).
ToolRun run_tool_binary(std::string_view binary_name, std::string_view tool,
                        const std::string& worktree, std::string_view stdin_text);
ToolRun run_loopr_tool(std::string_view tool, const std::string& worktree,
                       std::string_view stdin_text);
ToolRun run_loopr_tool(std::string_view tool, const std::string& worktree,
                       const nlohmann::json& args);

// Path of a binary in build/bin ($LOOPR_BIN_DIR).
std::string bin_path(std::string_view name);

}  // namespace loopr::test
