// Tool traits: the facts about a tool that looprd, the runners and the loop
// engine act on, read from the catalog (ToolSpec) instead of compared against
// tool names (issue 26). Only the catalog and the tools' own implementations
// name tools; everything else asks a trait.
//
// Each trait has a catalog key of the same name and a text form (to_string /
// parse_*), which tool.list shows. Who may set which (config/catalog.cpp):
//   command      a user's catalog file (not a repository's): it picks which
//                shell command runs;
//   result_view  a user's catalog file (not a repository's): it shapes what a
//                model reads;
//   file_access, web, warm_worker, consults_model, memory: no file at all.
//                They describe what loopr's own implementation of a built-in
//                tool does (which file it touches, which binary runs it,
//                whether a warm worker can serve it, whether it spends model
//                tokens, what it does to the memory notes), so
//                a wrong value would break read tracking or sandbox choices
//                rather than describe anything. A new tool has the defaults.
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace loopr::config {

// Which command a tool runs, if any: a trait read by the ToolRouter instead of
// the tool's name. "from-arguments": the model's `command` argument
// (run_command, run_command_isolated); "build", "test", "validate": the
// repository's configured [commands] entry of that name, never one from the
// model; "none": the tool runs no shell command. A command tool's output is
// an exit code with stdout/stderr, and its calls are not retried blindly.
enum class ToolCommand { none, from_arguments, build, test, validate };

// What a tool does to the one file its `path` argument names, as looprd's
// read-before-edit tracking and per-file locks see it: "read" (read_file:
// the file's content hash is remembered), "write" (write_file, edit_file:
// the file must have been read first, calls on one path run one at a time,
// and the new hash is remembered), "delete" (file_delete: runs one at a time
// per path, and the path is forgotten), "none" (everything else, listings
// included).
enum class FileAccess { none, read, write, remove };

// Which of looprd's web facilities a tool is: "fetch" (web_fetch) or
// "search" (web_search) takes the networks it may reach from that loopr.toml
// table ([web_fetch] / [web_search] allowed_networks), "search" also the
// provider's key, and both run in loopr-fetch instead of loopr-tool; "none":
// any other tool.
enum class WebFacility { none, fetch, search };

// How a loop shows a successful result to its model (loops/tool_result_view):
// "command" (exit code and merged output), "file" (numbered lines),
// "directory" (list_directory's entries), "paths" (glob's matches), "grep"
// (grep's lines), "json" (compact JSON without hashes; the default).
enum class ResultView { json, command, file, directory, paths, grep };

// What a tool does to the repository's memory notes (memory/, hosted by
// looprd): "search" finds notes, "save" adds one, "update" and "delete"
// change or remove one by id; "none": any other tool. A loop's prompt tells
// the model about notes only when it is offered a tool that searches them.
enum class MemoryAccess { none, search, save, update, remove };

std::string_view to_string(ToolCommand command);
std::string_view to_string(FileAccess access);
std::string_view to_string(WebFacility web);
std::string_view to_string(ResultView view);
std::string_view to_string(MemoryAccess access);

std::optional<ToolCommand> parse_tool_command(std::string_view text);
std::optional<FileAccess> parse_file_access(std::string_view text);
std::optional<WebFacility> parse_web_facility(std::string_view text);
std::optional<ResultView> parse_result_view(std::string_view text);
std::optional<MemoryAccess> parse_memory_access(std::string_view text);

// The text forms, in declaration order: the choices an error message lists.
std::span<const std::string_view> tool_command_choices();
std::span<const std::string_view> result_view_choices();

}  // namespace loopr::config
