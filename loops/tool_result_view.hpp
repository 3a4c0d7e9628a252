// What a model reads of a tool result (issue 24). A tool.call result is
// shaped for programs: JSON with hashes, base64 copies of non-UTF-8 bytes,
// stdout and stderr apart, and as large as the tool's own output cap (1 MB
// for `test`). The loop engine does not put that into the conversation; it
// puts this view, chosen by the tool's result_view trait (config::ResultView):
//   - commands (run_command, run_command_isolated, build, test, validate):
//     "exit code N · 1.2 s" and notes, then the output merged as a terminal
//     shows it (the tool's `output`; else stdout, then stderr);
//   - read_file: a header (path, lines shown, total), the numbered lines, and
//     where to continue;
//   - list_directory, glob, grep: one path (or grep line) a line;
//   - anything else: compact JSON without content_hash and *_base64 fields;
//   - a failure: {"error": {code, message, hint}} as before;
//   - the user's hooks' notes (hook_notes): one "[hook: …]" line each, put
//     before the capped view by capped_view(), not part of the paged view.
// The view is then held to `cap` bytes: read_file and listings keep whole
// lines from the top and say how to continue (read_file's next offset is
// the first line not shown); everything else keeps its head and tail around
// a marker that says how much was cut and how to read it (read_output with
// the call's id and a byte offset into the whole view). The engine keeps the
// whole result in the journal, so read_output pages the same view later.
// Pure functions: no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "config/tool_traits.hpp"

namespace loopr::loops {

// The whole view of `outcome` (a tool.call result), as `view` shapes it,
// uncapped, without the hooks' notes.
std::string full_view(config::ResultView view, const nlohmann::json& outcome);
// The hooks' notes of `outcome`, a "[hook: …]" line each ("" for none).
std::string hook_notes_text(const nlohmann::json& outcome);

struct CappedView {
  std::string text;         // at most the cap (plus a marker line of < 400 bytes)
  bool cut = false;         // something was left out
  std::size_t whole_bytes;  // size of full_view()
  std::string whole;        // full_view() itself when cut (for read_output); else empty
};

// full_view() held to `cap` bytes; `call_id` names the call in the marker
// (for read_output). cap 0: no cap.
CappedView capped_view(config::ResultView view, const std::string& call_id,
                       const nlohmann::json& outcome, std::size_t cap);

// read_output's page: `view` (a full_view) from byte `offset` for at most
// `limit` bytes, ending at a line's end when one is within the page (a
// line longer than the page is cut, never a UTF-8 sequence), followed by a
// line giving the next offset when more is left. An offset past the end is
// an empty page that says so.
std::string view_page(const std::string& view, std::size_t offset, std::size_t limit);

}  // namespace loopr::loops
