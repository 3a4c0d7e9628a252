// loopr-tool <tool> --worktree DIR
//
// Reads the tool's JSON arguments on stdin and writes one JSON result on
// stdout. Exit status: 0 success, 1 tool error ({"error": {...}} on stdout),
// 2 usage error (bad command line; a message on stderr and an error object on
// stdout). This main is loopr-tool's single dispatch boundary (common/error.hpp).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>

#include "loopr-tool/tool_registry.hpp"

#if defined(__SANITIZE_ADDRESS__)
// In sanitizer builds: LeakSanitizer stops the world with ptrace at exit,
// which the job's seccomp filter denies, so leak checks are off for this
// binary (it runs inside the sandbox). Its code is leak-checked in-process
// by the unit tests, which link the same library.
extern "C" const char* __asan_default_options() { return "detect_leaks=0"; }
#endif

namespace {

using loopr::Error;
using loopr::make_error;
namespace errc = loopr::errc;
using Json = nlohmann::json;

// Arguments larger than this are refused: write_file content is the only big
// argument, and a tool call carrying more is a mistake.
constexpr std::size_t kMaxArgumentBytes = 64u << 20;

constexpr int kExitSuccess = 0;
constexpr int kExitToolError = 1;
constexpr int kExitUsage = 2;

void print_json(const Json& value) {
  std::string out = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  out += '\n';
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
}

int fail(const Error& error, int status) {
  print_json(Json{{"error", error.to_json()}});
  return status;
}

std::string tool_names() {
  std::string names;
  for (const auto& entry : loopr::tool::all_tools()) {
    if (!names.empty()) names += ", ";
    names += entry.name;
  }
  return names;
}

int usage(const std::string& problem) {
  const std::string text =
      "usage: loopr-tool <tool> --worktree DIR  (JSON arguments on stdin)\n"
      "tools: " +
      tool_names() + "\n";
  std::cerr << "loopr-tool: " << problem << "\n" << text;
  return fail(make_error(errc::invalid_arguments, problem, text), kExitUsage);
}

loopr::Result<std::string> read_stdin() {
  std::string input;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(STDIN_FILENO, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return loopr::errno_error(errno, "cannot read arguments from stdin", "");
    if (n == 0) break;
    input.append(buffer, static_cast<std::size_t>(n));
    if (input.size() > kMaxArgumentBytes) {
      return make_error(errc::too_large,
                        "tool arguments exceed " + std::to_string(kMaxArgumentBytes >> 20) + " MiB",
                        "split the content into smaller writes or edits");
    }
  }
  return input;
}

int run(int argc, char** argv) {
  std::string tool_name;
  std::string worktree_path;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << "usage: loopr-tool <tool> --worktree DIR  (JSON arguments on stdin)\n"
                << "tools: " << tool_names() << "\n";
      return kExitSuccess;
    }
    if (arg == "--worktree") {
      if (i + 1 >= argc) return usage("--worktree needs a directory");
      worktree_path = argv[++i];
    } else if (arg.starts_with("--worktree=")) {
      worktree_path = std::string(arg.substr(11));
    } else if (arg.starts_with("-")) {
      return usage("unknown option '" + std::string(arg) + "'");
    } else if (tool_name.empty()) {
      tool_name = std::string(arg);
    } else {
      return usage("unexpected argument '" + std::string(arg) + "'");
    }
  }
  if (tool_name.empty()) return usage("no tool named");
  const auto* tool = loopr::tool::find_tool(tool_name);
  if (tool == nullptr) return usage("unknown tool '" + tool_name + "'");
  if (worktree_path.empty()) return usage("--worktree DIR is required");

  auto worktree = loopr::tool::Worktree::open(worktree_path);
  if (!worktree) return usage(worktree.error().message);

  auto input = read_stdin();
  if (!input) return fail(input.error(), kExitToolError);
  Json args;
  try {
    args = input->empty() ? Json::object() : Json::parse(*input);
  } catch (const Json::parse_error& e) {
    return fail(make_error(errc::invalid_arguments,
                           "arguments on stdin are not valid JSON: " + std::string(e.what()),
                           "send one JSON object, e.g. {\"path\": \"README.md\"}"),
                kExitToolError);
  }
  auto result = tool->run(*worktree, args);
  if (!result) return fail(result.error(), kExitToolError);
  print_json(*result);
  return kExitSuccess;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    // A bug, not an input problem: still an error reply, never a crash.
    return fail(make_error(errc::internal, std::string("internal error: ") + e.what(),
                           "report this as a loopr bug"),
                kExitToolError);
  }
}
