// The tools loopr-tool runs. Each takes its JSON arguments and the worktree,
// and returns a JSON result object or an Error (DESIGN.md §5). A tool never
// writes to stdout itself: main() is the one place results are printed.
#pragma once

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "loopr-tool/worktree.hpp"

namespace loopr::tool {

using Json = nlohmann::json;

Result<Json> read_file(const Worktree& worktree, const Json& args);
Result<Json> write_file(const Worktree& worktree, const Json& args);
Result<Json> edit_file(const Worktree& worktree, const Json& args);
Result<Json> file_delete(const Worktree& worktree, const Json& args);
Result<Json> list_directory(const Worktree& worktree, const Json& args);
Result<Json> glob(const Worktree& worktree, const Json& args);
Result<Json> grep(const Worktree& worktree, const Json& args);
Result<Json> run_command(const Worktree& worktree, const Json& args);
Result<Json> run_command_isolated(const Worktree& worktree, const Json& args);
// The heavy lane's configured commands: {"command"} is added by the daemon
// from loopr.toml [commands], never by the model (run_command.cpp).
Result<Json> build(const Worktree& worktree, const Json& args);
Result<Json> test(const Worktree& worktree, const Json& args);
Result<Json> validate(const Worktree& worktree, const Json& args);
// A [[hooks]] command of the user's, sent by the daemon only (run_command.cpp).
Result<Json> hook(const Worktree& worktree, const Json& args);

}  // namespace loopr::tool
