#include "loopr-tool/tool_main.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

#include "loopr-tool/job_facts.hpp"
#include "loopr-tool/output_fit.hpp"

namespace loopr::tool {
namespace {

using Json = nlohmann::json;

// What one run of the binary knows about itself.
struct Program {
  std::string_view name;
  std::span<const ToolEntry> tools;
  ServeFunction serve = nullptr;
};

// Arguments larger than this are refused: write_file content is the only big
// argument, and a tool call carrying more is a mistake.
constexpr std::size_t kMaxArgumentBytes = 64u << 20;

constexpr int kExitSuccess = 0;
constexpr int kExitToolError = 1;
constexpr int kExitUsage = 2;

std::string json_line(const Json& value) {
  std::string out = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  out += '\n';
  return out;
}

void print_text(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

ToolOutput failure(const Error& error, int status) {
  return {status, json_line(Json{{"error", error.to_json()}})};
}

int fail(const Error& error, int status) {
  print_text(failure(error, status).stdout_text);
  return status;
}

std::string tool_names(const Program& program) {
  std::string names;
  for (const auto& entry : program.tools) {
    if (!names.empty()) names += ", ";
    names += entry.name;
  }
  return names;
}

std::string usage_text(const Program& program) {
  return "usage: " + std::string(program.name) +
         " <tool> --worktree DIR  (JSON arguments on stdin)\ntools: " + tool_names(program) + "\n";
}

Error usage_error(const Program& program, const std::string& problem) {
  return make_error(errc::invalid_arguments, problem, usage_text(program));
}

int usage(const Program& program, const std::string& problem) {
  const std::string text = usage_text(program);
  std::cerr << program.name << ": " << problem << "\n" << text;
  return fail(usage_error(program, problem), kExitUsage);
}

Result<std::string> read_stdin() {
  std::string input;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(STDIN_FILENO, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_error(errno, "cannot read arguments from stdin", "");
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

const ToolEntry* find(const Program& program, std::string_view name) {
  for (const ToolEntry& entry : program.tools) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

ToolOutput call(const Program& program, std::string_view tool_name, const Worktree& worktree,
                std::string_view input, std::size_t max_output_bytes) {
  const ToolEntry* tool = find(program, tool_name);
  if (tool == nullptr) {
    return failure(usage_error(program, "unknown tool '" + std::string(tool_name) + "'"),
                   kExitUsage);
  }
  Json args;
  try {
    args = input.empty() ? Json::object() : Json::parse(input);
  } catch (const Json::parse_error& e) {
    return failure(make_error(errc::invalid_arguments,
                              "arguments on stdin are not valid JSON: " + std::string(e.what()),
                              "send one JSON object, e.g. {\"path\": \"README.md\"}"),
                   kExitToolError);
  }
  auto result = tool->run(worktree, args);
  if (!result) return failure(result.error(), kExitToolError);
  fit_listing_to_output_cap(tool_name, *result, max_output_bytes);
  fit_page_to_output_cap(tool_name, args, *result, max_output_bytes,
                         [&](const Json& shorter) { return tool->run(worktree, shorter); });
  return {kExitSuccess, json_line(*result)};
}

ToolOutput internal_failure(const std::exception& e) {
  // A bug, not an input problem: still an error reply, never a crash.
  return failure(make_error(errc::internal, std::string("internal error: ") + e.what(),
                            "report this as a loopr bug"),
                 kExitToolError);
}

int run(const Program& program, int argc, char** argv) {
  std::string tool_name;
  std::string worktree_path;
  bool serve = false;
  int filter_fd = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << usage_text(program);
      return kExitSuccess;
    }
    if (arg == "--worktree") {
      if (i + 1 >= argc) return usage(program, "--worktree needs a directory");
      worktree_path = argv[++i];
    } else if (arg.starts_with("--worktree=")) {
      worktree_path = std::string(arg.substr(11));
    } else if (arg == "--serve" && program.serve != nullptr) {
      serve = true;
    } else if (arg == "--filter-fd" && program.serve != nullptr) {
      if (i + 1 >= argc) return usage(program, "--filter-fd needs a file descriptor");
      filter_fd = std::atoi(argv[++i]);
      if (filter_fd < 3) return usage(program, "--filter-fd needs a descriptor above 2");
    } else if (arg.starts_with("-")) {
      return usage(program, "unknown option '" + std::string(arg) + "'");
    } else if (tool_name.empty()) {
      tool_name = std::string(arg);
    } else {
      return usage(program, "unexpected argument '" + std::string(arg) + "'");
    }
  }
  if (serve && !tool_name.empty()) return usage(program, "--serve takes no tool name");
  if (!serve && tool_name.empty()) return usage(program, "no tool named");
  if (!serve && find(program, tool_name) == nullptr) {
    return usage(program, "unknown tool '" + tool_name + "'");
  }
  if (worktree_path.empty()) return usage(program, "--worktree DIR is required");

  auto worktree = Worktree::open(worktree_path);
  if (!worktree) return usage(program, worktree.error().message);
  if (serve) return program.serve(program.name, program.tools, *worktree, filter_fd);

  auto input = read_stdin();
  if (!input) return fail(input.error(), kExitToolError);
  const ToolOutput output =
      call(program, tool_name, *worktree, *input, job_max_output_bytes().value_or(0));
  print_text(output.stdout_text);
  return output.exit_code;
}

}  // namespace

ToolOutput call_tool(std::string_view program_name, std::span<const ToolEntry> tools,
                     std::string_view tool_name, const Worktree& worktree, std::string_view input,
                     std::size_t max_output_bytes) {
  const Program program{program_name, tools};
  try {
    return call(program, tool_name, worktree, input, max_output_bytes);
  } catch (const std::exception& e) {
    return internal_failure(e);
  }
}

int tool_main(int argc, char** argv, std::string_view program_name,
              std::span<const ToolEntry> tools, ServeFunction serve) {
  const Program program{program_name, tools, serve};
  try {
    return run(program, argc, argv);
  } catch (const std::exception& e) {
    const ToolOutput output = internal_failure(e);
    print_text(output.stdout_text);
    return output.exit_code;
  }
}

}  // namespace loopr::tool
