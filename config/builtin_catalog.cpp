// The built-in catalog: DESIGN §5, with the argument schemas the tools accept.
// loopr-tool and looprd implement these arguments; a change here is a change
// of the tools' contract with the model.
#include <string_view>

#include "config/catalog.hpp"

namespace loopr::config {

namespace {

struct BuiltinTool {
  std::string_view name;
  std::string_view lane;
  std::int64_t timeout_ms;
  std::int64_t max_output_bytes;
  SafetyTier tier;
  std::string_view description;
  std::string_view input_schema;   // JSON
  std::string_view output_schema;  // JSON of the tool's success output; empty: none
};

constexpr std::int64_t kSecond = 1000;

// Output schemas: the `output` of a successful call, as the tools build it
// (loopr-tool/*.cpp, loopr-fetch/web_*.cpp, memory/notebook.cpp,
// oracle/oracle.cpp). MCP clients check a result against them strictly, so
// every key a tool can emit is listed, `required` holds the ones always
// present, and a new key in a tool's result needs its line here
// (tests/daemon/output_schema_test.cpp calls each tool and checks). They
// keep to check_tool_schema's subset: a value that may be null is a oneOf.
// The loop engine's own tools (complete_task, create_*) have none: they only
// run inside a loop, never through tool.call.
constexpr std::string_view kNoOutputSchema;

constexpr std::string_view kReadFileOutput = R"({"type": "object",
  "properties": {
    "path": {"type": "string", "description": "The file, relative to the worktree."},
    "content": {"type": "string", "description": "The lines, each `%6d|line` and a newline."},
    "start_line": {"type": "integer", "minimum": 1},
    "lines_returned": {"type": "integer", "minimum": 0},
    "size_bytes": {"type": "integer", "minimum": 0},
    "invalid_utf8": {"type": "boolean"},
    "lines_cut": {"type": "integer", "minimum": 0},
    "total_lines": {"oneOf": [{"type": "integer", "minimum": 0}, {"type": "null"}],
                    "description": "null for a file too large to edit: its lines are not counted."},
    "more": {"type": "boolean"},
    "next_offset": {"type": "integer", "minimum": 1},
    "content_hash": {"oneOf": [{"type": "string"}, {"type": "null"}]},
    "too_large_to_edit": {"type": "boolean"},
    "line_endings": {"type": "string", "enum": ["crlf"]},
    "note": {"type": "string"},
    "hint": {"type": "string",
             "description": "When the page was cut to fit the tool's output limit: by how much, and the offset to read on from."}},
  "required": ["path", "content", "start_line", "lines_returned", "size_bytes", "invalid_utf8",
               "lines_cut", "total_lines", "more", "content_hash"],
  "additionalProperties": false})";

constexpr std::string_view kWriteFileOutput = R"({"type": "object",
  "properties": {
    "path": {"type": "string"},
    "bytes_written": {"type": "integer", "minimum": 0},
    "created": {"type": "boolean"},
    "content_hash": {"type": "string"}},
  "required": ["path", "bytes_written", "created", "content_hash"],
  "additionalProperties": false})";

constexpr std::string_view kEditFileOutput = R"({"type": "object",
  "properties": {
    "path": {"type": "string"},
    "replacements": {"type": "integer", "minimum": 0},
    "created": {"type": "boolean"},
    "content_hash": {"type": "string"},
    "bytes_written": {"type": "integer", "minimum": 0},
    "snippet": {"type": "string", "description": "The changed lines with some context, numbered."},
    "line_endings": {"type": "string", "enum": ["crlf"]},
    "notes": {"type": "array", "items": {"type": "string"}}},
  "required": ["path", "replacements", "created", "content_hash", "bytes_written", "snippet"],
  "additionalProperties": false})";

constexpr std::string_view kFileDeleteOutput = R"({"type": "object",
  "properties": {
    "path": {"type": "string"},
    "deleted": {"type": "string", "enum": ["file", "directory", "symlink"]},
    "entries_removed": {"type": "integer", "minimum": 1}},
  "required": ["path", "deleted", "entries_removed"],
  "additionalProperties": false})";

constexpr std::string_view kListDirectoryOutput = R"({"type": "object",
  "properties": {
    "path": {"type": "string"},
    "entries": {"type": "array",
                "items": {"type": "object",
                          "properties": {
                            "path": {"type": "string"},
                            "size": {"type": "integer", "minimum": 0},
                            "is_dir": {"type": "boolean"},
                            "is_symlink": {"type": "boolean"}},
                          "required": ["path", "size", "is_dir", "is_symlink"],
                          "additionalProperties": false}},
    "truncated": {"type": "boolean"},
    "total_seen": {"type": "integer", "minimum": 0},
    "ignored": {"type": "integer", "minimum": 1,
                "description": "Entries left out because .gitignore or .git/info/exclude ignores them (an ignored folder counts once); absent when none were."},
    "hint": {"type": "string"}},
  "required": ["path", "entries", "truncated"],
  "additionalProperties": false})";

constexpr std::string_view kGlobOutput = R"({"type": "object",
  "properties": {
    "pattern": {"type": "string"},
    "path": {"type": "string"},
    "matches": {"type": "array", "items": {"type": "string"},
                "description": "Paths relative to the worktree, newest first."},
    "count": {"type": "integer", "minimum": 0},
    "truncated": {"type": "boolean"},
    "skipped_binary": {"type": "integer", "minimum": 0},
    "skipped_symlinks": {"type": "integer", "minimum": 0},
    "hint": {"type": "string"}},
  "required": ["pattern", "path", "matches", "count", "truncated", "skipped_binary",
               "skipped_symlinks"],
  "additionalProperties": false})";

constexpr std::string_view kGrepOutput = R"({"type": "object",
  "properties": {
    "pattern": {"type": "string"},
    "mode": {"type": "string", "enum": ["content", "files", "count"]},
    "content": {"type": "string", "description": "content mode: `path:line:text` lines."},
    "files": {"type": "array", "items": {"type": "string"}, "description": "files mode."},
    "counts": {"type": "array", "description": "count mode.",
               "items": {"type": "object",
                         "properties": {
                           "path": {"type": "string"},
                           "count": {"type": "integer", "minimum": 0}},
                         "required": ["path", "count"],
                         "additionalProperties": false}},
    "match_count": {"type": "integer", "minimum": 0,
                    "description": "Matching lines in all; absent in files mode."},
    "files_matched": {"type": "integer", "minimum": 0},
    "files_searched": {"type": "integer", "minimum": 0},
    "truncated": {"type": "boolean"},
    "skipped_binary": {"type": "integer", "minimum": 0},
    "skipped_symlinks": {"type": "integer", "minimum": 0},
    "hint": {"type": "string"}},
  "required": ["pattern", "mode", "files_matched", "files_searched", "truncated",
               "skipped_binary", "skipped_symlinks"],
  "additionalProperties": false})";

// run_command, run_command_isolated, build, test and validate.
constexpr std::string_view kCommandOutput = R"({"type": "object",
  "properties": {
    "command": {"type": "string"},
    "exit_code": {"oneOf": [{"type": "integer"}, {"type": "null"}],
                  "description": "null when the command was ended by a signal."},
    "output": {"type": "string",
               "description": "stdout and stderr interleaved as a terminal shows `cmd 2>&1`; when long, its head and tail around a line saying how many bytes were cut."},
    "output_bytes": {"type": "integer", "minimum": 0,
                     "description": "Bytes the command printed on stdout and stderr, before any cut."},
    "stdout": {"type": "string", "description": "stdout alone, cut like output."},
    "stderr": {"type": "string", "description": "stderr alone, cut like output."},
    "timed_out": {"type": "boolean"},
    "truncated": {"type": "boolean"},
    "duration_ms": {"type": "integer", "minimum": 0},
    "signal": {"type": "integer"},
    "stdout_base64": {"type": "string", "description": "stdout exactly, when it is not UTF-8."},
    "stderr_base64": {"type": "string", "description": "stderr exactly, when it is not UTF-8."},
    "interrupted": {"type": "boolean"},
    "hint": {"type": "string"},
    "sandbox_note": {"type": "string"},
    "disk_note": {"type": "string"},
    "limit": {"type": "object",
              "description": "The loopr limit that stopped or cut the command, and the setting that raises it.",
              "properties": {
                "name": {"type": "string", "enum": ["memory", "address_space", "processes", "time", "disk", "file_size", "output"]},
                "key": {"type": "string"}, "value": {"type": "integer", "minimum": 0},
                "unit": {"type": "string"}, "message": {"type": "string"}},
              "required": ["name", "key", "value", "unit", "message"],
              "additionalProperties": false},
    "egress_refused": {"type": "array", "maxItems": 16,
                       "description": "Connections loopr's egress proxy refused during the call: why, and the loopr.toml key that would allow each.",
                       "items": {"type": "object",
                                 "properties": {
                                   "host": {"type": "string"}, "port": {"type": "integer"},
                                   "rule": {"type": "string"}, "message": {"type": "string"},
                                   "allow_key": {"type": "string"}},
                                 "required": ["host", "port", "rule", "message"],
                                 "additionalProperties": false}}},
  "required": ["command", "exit_code", "output", "output_bytes", "stdout", "stderr", "timed_out",
               "truncated", "duration_ms"],
  "additionalProperties": false})";

constexpr std::string_view kWebFetchOutput = R"({"type": "object",
  "properties": {
    "url": {"type": "string", "description": "The URL fetched, after redirects."},
    "status": {"type": "integer"},
    "content_type": {"type": "string"},
    "format": {"type": "string", "enum": ["markdown", "text", "html"]},
    "bytes": {"type": "integer", "minimum": 0},
    "truncated": {"type": "boolean"},
    "redirects": {"type": "integer", "minimum": 1},
    "title": {"type": "string"},
    "content": {"type": "string"}},
  "required": ["url", "status", "content_type", "format", "bytes", "truncated", "content"],
  "additionalProperties": false})";

constexpr std::string_view kWebSearchOutput = R"({"type": "object",
  "properties": {
    "provider": {"type": "string"},
    "query": {"type": "string"},
    "results": {"type": "array",
                "items": {"type": "object",
                          "properties": {
                            "title": {"type": "string"},
                            "url": {"type": "string"},
                            "snippet": {"type": "string"}},
                          "required": ["title", "url", "snippet"],
                          "additionalProperties": false}}},
  "required": ["provider", "query", "results"],
  "additionalProperties": false})";

constexpr std::string_view kMemorySearchOutput = R"({"type": "object",
  "properties": {
    "results": {"type": "array",
                "description": "Best first: notes, and with include_conversation turns of earlier loops (note_id null).",
                "items": {"type": "object",
                          "properties": {
                            "note_id": {"oneOf": [{"type": "string"}, {"type": "null"}]},
                            "score": {"type": "number"},
                            "snippet": {"type": "string"},
                            "source": {"type": "string"},
                            "scope": {"type": "string", "enum": ["repo", "user"]},
                            "updated_at": {"type": "string"},
                            "tags": {"type": "array", "items": {"type": "string"}},
                            "loop_id": {"type": "string"},
                            "iteration": {"type": "integer"},
                            "text": {"type": "string"},
                            "text_truncated": {"type": "boolean"}},
                          "required": ["note_id", "score", "snippet", "source", "updated_at",
                                       "text"],
                          "additionalProperties": false}},
    "message": {"type": "string"}},
  "required": ["results", "message"],
  "additionalProperties": false})";

// memory_save and memory_update.
constexpr std::string_view kMemoryNoteOutput = R"({"type": "object",
  "properties": {
    "note_id": {"type": "string"},
    "message": {"type": "string"}},
  "required": ["note_id", "message"],
  "additionalProperties": false})";

constexpr std::string_view kMemoryDeleteOutput = R"({"type": "object",
  "properties": {
    "note_id": {"type": "string"},
    "deleted": {"type": "boolean", "enum": [true]},
    "message": {"type": "string"}},
  "required": ["note_id", "deleted", "message"],
  "additionalProperties": false})";

constexpr std::string_view kOracleOutput = R"({"type": "object",
  "properties": {
    "answer": {"type": "string"},
    "answer_truncated": {"type": "boolean"},
    "model": {"type": "string"},
    "usage": {"type": "object",
              "properties": {
                "input_tokens": {"type": "integer", "minimum": 0},
                "output_tokens": {"type": "integer", "minimum": 0},
                "cache_read_tokens": {"type": "integer", "minimum": 0},
                "cache_write_tokens": {"type": "integer", "minimum": 0}},
              "required": ["input_tokens", "output_tokens", "cache_read_tokens",
                           "cache_write_tokens"],
              "additionalProperties": false},
    "cost_usd": {"oneOf": [{"type": "number"}, {"type": "null"}],
                 "description": "null when loopr.toml has no price for the model."},
    "max_tokens": {"type": "integer", "minimum": 0},
    "stop_reason": {"type": "string",
                    "enum": ["end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal",
                             "other"]},
    "files": {"type": "array",
              "items": {"type": "object",
                        "properties": {
                          "path": {"type": "string"},
                          "bytes": {"type": "integer", "minimum": 0},
                          "truncated": {"type": "boolean"},
                          "size_bytes": {"type": "integer", "minimum": 0},
                          "lines": {"oneOf": [{"type": "string"}, {"type": "null"}],
                                    "description": "The lines attached, e.g. 1-120; null: none."},
                          "total_lines": {"oneOf": [{"type": "integer", "minimum": 0},
                                                    {"type": "null"}]},
                          "cut": {"type": "string"}},
                        "required": ["path", "bytes", "truncated", "size_bytes", "lines",
                                     "total_lines"],
                        "additionalProperties": false}},
    "context_truncated": {"type": "boolean"}},
  "required": ["answer", "model", "usage", "cost_usd", "max_tokens", "stop_reason", "files",
               "context_truncated"],
  "additionalProperties": false})";

// clang-format off
constexpr BuiltinTool kBuiltinTools[] = {
{"read_file", lanes::no_net, 10 * kSecond, 100000, SafetyTier::read_only,
 "Read a text file from the worktree. Returns numbered lines in `cat -n` style "
 "(`%6d|line`), starting at `offset` (1-based) for at most `limit` lines, plus the file's total "
 "line count and whether more lines remain; page through a long file by raising `offset` "
 "(`next_offset` is where the next page starts). A page that would pass the tool's output "
 "limit ends at the last whole line that fits, with more true and a hint. Lines over 2000 "
 "characters are cut and end with `...`. Binary files are refused. You must read a file "
 "before you edit or overwrite it.",
 R"({"type": "object",
     "properties": {
       "path": {"type": "string", "minLength": 1,
                "description": "File path, relative to the worktree (an absolute path must lie inside it)."},
       "offset": {"type": "integer", "minimum": 1, "default": 1,
                  "description": "First line to return, 1-based."},
       "limit": {"type": "integer", "minimum": 1, "default": 2000,
                 "description": "Maximum number of lines to return."}},
     "required": ["path"],
     "additionalProperties": false})", kReadFileOutput},

{"write_file", lanes::no_net, 10 * kSecond, 100000, SafetyTier::side_effecting,
 "Write `content` to a file in the worktree, replacing it whole. Parent folders are created; "
 "the write is atomic and keeps an existing file's mode. Overwriting an existing file requires "
 "that you read it first; to change part of a file prefer edit_file.",
 R"({"type": "object",
     "properties": {
       "path": {"type": "string", "minLength": 1,
                "description": "File path, relative to the worktree."},
       "content": {"type": "string", "description": "The complete new content of the file."}},
     "required": ["path", "content"],
     "additionalProperties": false})", kWriteFileOutput},

{"edit_file", lanes::no_net, 10 * kSecond, 100000, SafetyTier::side_effecting,
 "Replace exact text in a file you have read (and that has not changed since). Give EITHER "
 "`old_string` + `new_string` (+ optional `replace_all`) for one replacement, OR `edits`, a "
 "list of {old_string, new_string, replace_all} applied in order, all or nothing - never both. "
 "`old_string` must match exactly once (whitespace and indentation included) unless "
 "`replace_all` is true; an empty `old_string` creates a new file with `new_string`. Line "
 "endings and the final newline are kept. A failed match names the nearest candidate.",
 R"({"type": "object",
     "properties": {
       "path": {"type": "string", "minLength": 1,
                "description": "File path, relative to the worktree."},
       "old_string": {"type": "string",
                      "description": "Exact text to replace (single-edit form). Empty creates a new file."},
       "new_string": {"type": "string", "description": "Replacement text (single-edit form)."},
       "replace_all": {"type": "boolean", "default": false,
                       "description": "Replace every occurrence instead of exactly one (single-edit form)."},
       "edits": {"type": "array", "minItems": 1,
                 "description": "Several replacements applied in order, all or nothing (multi-edit form; do not combine with old_string/new_string).",
                 "items": {"type": "object",
                           "properties": {
                             "old_string": {"type": "string", "description": "Exact text to replace."},
                             "new_string": {"type": "string", "description": "Replacement text."},
                             "replace_all": {"type": "boolean", "default": false,
                                             "description": "Replace every occurrence."}},
                           "required": ["old_string", "new_string"],
                           "additionalProperties": false}}},
     "required": ["path"],
     "additionalProperties": false})", kEditFileOutput},

{"file_delete", lanes::no_net, 10 * kSecond, 100000, SafetyTier::side_effecting,
 "Delete a file, or a folder when `recursive` is true. A non-empty folder is refused unless "
 "`recursive` is true.",
 R"({"type": "object",
     "properties": {
       "path": {"type": "string", "minLength": 1,
                "description": "Path to delete, relative to the worktree."},
       "recursive": {"type": "boolean", "default": false,
                     "description": "Delete a folder and everything in it."}},
     "required": ["path"],
     "additionalProperties": false})", kFileDeleteOutput},

{"list_directory", lanes::no_net, 5 * kSecond, 100000, SafetyTier::read_only,
 "List a folder of the worktree: each entry with its path, size and whether it is a folder. "
 "With `recursive`, descends up to `max_depth` levels. Entries ignored by .gitignore (or "
 ".git/info/exclude) are left out and counted in `ignored`; pass `include_ignored` to list "
 "them too. .git is listed but not entered. Long listings are capped; narrow the path or use "
 "glob.",
 R"({"type": "object",
     "properties": {
       "path": {"type": "string", "default": ".",
                "description": "Folder to list, relative to the worktree."},
       "recursive": {"type": "boolean", "default": false,
                     "description": "Also list the contents of sub-folders."},
       "max_depth": {"type": "integer", "minimum": 1, "default": 10,
                     "description": "How many levels to descend when recursive."},
       "include_ignored": {"type": "boolean", "default": false,
                           "description": "Also list entries that .gitignore ignores (node_modules, build output, ...)."}},
     "additionalProperties": false})", kListDirectoryOutput},

{"glob", lanes::no_net, 30 * kSecond, 50000, SafetyTier::read_only,
 "Find files whose path matches a glob pattern such as `src/**/*.cpp` (`**` matches any "
 "number of folders). Files ignored by .gitignore are skipped; results are newest first and "
 "capped.",
 R"({"type": "object",
     "properties": {
       "pattern": {"type": "string", "minLength": 1,
                   "description": "Glob pattern, relative to `path`, e.g. **/*.py."},
       "path": {"type": "string", "default": ".",
                "description": "Folder to search from, relative to the worktree."}},
     "required": ["pattern"],
     "additionalProperties": false})", kGlobOutput},

{"grep", lanes::no_net, 60 * kSecond, 100000, SafetyTier::read_only,
 "Search file contents with a regular expression. Files ignored by .gitignore are skipped. "
 "`output_mode` chooses matching lines with line numbers (`content`), only the names of "
 "matching files (`files`), or match counts per file (`count`). Results are capped; narrow "
 "with `path` or `file_pattern`.",
 R"({"type": "object",
     "properties": {
       "pattern": {"type": "string", "minLength": 1,
                   "description": "Regular expression to search for."},
       "path": {"type": "string", "default": ".",
                "description": "File or folder to search, relative to the worktree."},
       "file_pattern": {"type": "string",
                        "description": "Only search files whose name matches this glob, e.g. *.rs."},
       "context": {"type": "integer", "minimum": 0, "default": 0,
                   "description": "Lines of context to show before and after each match (content mode)."},
       "case_insensitive": {"type": "boolean", "default": false,
                            "description": "Ignore letter case."},
       "output_mode": {"type": "string", "enum": ["content", "files", "count"],
                       "default": "content",
                       "description": "content: matching lines; files: file names; count: matches per file."}},
     "required": ["pattern"],
     "additionalProperties": false})", kGrepOutput},

{"run_command", lanes::net, 120 * kSecond, 100000, SafetyTier::privileged,
 "Run a shell command (`sh -c`) in the worktree, with network access. stdin is empty. Returns "
 "exit_code, output (stdout and stderr interleaved as a terminal shows them; long output keeps "
 "its head and tail and says how many bytes were cut), stdout and stderr apart, timed_out and "
 "truncated. Prefer the file tools for reading, searching and editing files.",
 R"({"type": "object",
     "properties": {
       "command": {"type": "string", "minLength": 1, "description": "Shell command to run."},
       "timeout_ms": {"type": "integer", "minimum": 1,
                      "description": "Stop the command after this many milliseconds (at most the tool's configured timeout)."},
       "cwd": {"type": "string",
               "description": "Folder to run in, relative to the worktree (default: the worktree)."}},
     "required": ["command"],
     "additionalProperties": false})", kCommandOutput},

{"run_command_isolated", lanes::no_net, 120 * kSecond, 100000, SafetyTier::privileged,
 "Run a shell command (`sh -c`) in the worktree without any network access. stdin is empty. "
 "Returns exit_code, output (stdout and stderr interleaved as a terminal shows them; long "
 "output keeps its head and tail and says how many bytes were cut), stdout and stderr apart, "
 "timed_out and truncated.",
 R"({"type": "object",
     "properties": {
       "command": {"type": "string", "minLength": 1, "description": "Shell command to run."},
       "timeout_ms": {"type": "integer", "minimum": 1,
                      "description": "Stop the command after this many milliseconds (at most the tool's configured timeout)."},
       "cwd": {"type": "string",
               "description": "Folder to run in, relative to the worktree (default: the worktree)."}},
     "required": ["command"],
     "additionalProperties": false})", kCommandOutput},

{"build", lanes::heavy, 600 * kSecond, 1000000, SafetyTier::privileged,
 "Run the project's configured build command in the worktree and return its exit code and "
 "output (stdout and stderr interleaved, head and tail when long). Takes no arguments.",
 R"({"type": "object", "properties": {}, "additionalProperties": false})", kCommandOutput},

{"test", lanes::heavy, 600 * kSecond, 1000000, SafetyTier::privileged,
 "Run the project's configured test command in the worktree and return its exit code and "
 "output (stdout and stderr interleaved, head and tail when long). Takes no arguments.",
 R"({"type": "object", "properties": {}, "additionalProperties": false})", kCommandOutput},

{"validate", lanes::heavy, 600 * kSecond, 1000000, SafetyTier::privileged,
 "Run the loop's validation command in the worktree and return its exit code and output "
 "(stdout and stderr interleaved, head and tail when long); exit code 0 means the work "
 "passes. Takes no arguments.",
 R"({"type": "object", "properties": {}, "additionalProperties": false})", kCommandOutput},

{"web_fetch", lanes::net, 30 * kSecond, 500000, SafetyTier::side_effecting,
 "Fetch an http(s) URL and return its content as markdown (default), plain text or raw HTML. "
 "Private, loopback and link-local addresses are refused.",
 R"({"type": "object",
     "properties": {
       "url": {"type": "string", "minLength": 1, "description": "http:// or https:// URL."},
       "format": {"type": "string", "enum": ["markdown", "text", "html"], "default": "markdown",
                  "description": "How to return the page."}},
     "required": ["url"],
     "additionalProperties": false})", kWebFetchOutput},

{"web_search", lanes::net, 30 * kSecond, 50000, SafetyTier::side_effecting,
 "Search the web and return the top results (title, URL, snippet). Use web_fetch to read a "
 "result.",
 R"({"type": "object",
     "properties": {
       "query": {"type": "string", "minLength": 1, "description": "Search query in natural language."},
       "max_results": {"type": "integer", "minimum": 1, "maximum": 10, "default": 5,
                       "description": "How many results to return."}},
     "required": ["query"],
     "additionalProperties": false})", kWebSearchOutput},

{"complete_task", lanes::daemon, 1 * kSecond, 10000, SafetyTier::side_effecting,
 "Declare the task finished. Call it once, when the work is done, with a summary of what you "
 "did; the loop then runs its validation.",
 R"({"type": "object",
     "properties": {
       "summary": {"type": "string", "minLength": 1,
                   "description": "What was accomplished, and anything left undone."}},
     "required": ["summary"],
     "additionalProperties": false})", kNoOutputSchema},

{"read_output", lanes::daemon, 1 * kSecond, 100000, SafetyTier::read_only,
 "Read more of an earlier tool result of this iteration that was cut to fit the "
 "conversation: the result's text from byte `offset` (the cut marker names the call and the "
 "offset where the cut began), one page at a time, each page ending with the next offset.",
 R"({"type": "object",
     "properties": {
       "call_id": {"type": "string", "minLength": 1,
                   "description": "The id of the tool call whose result was cut, as the cut marker names it."},
       "offset": {"type": "integer", "minimum": 0, "default": 0,
                  "description": "Byte offset into the whole result to start from."}},
     "required": ["call_id"],
     "additionalProperties": false})", kNoOutputSchema},

{"create_plan", lanes::daemon, 5 * kSecond, 100000, SafetyTier::side_effecting,
 "Record the plan as structured output: a title, an overview and 1 to 10 specs with unique "
 "names (each 1 to 40 characters of a-z, 0-9 and -, starting with a letter or digit, without "
 "--); a spec's dependencies name other specs of this plan, never itself, without cycles. "
 "Text fields must not be blank. The plan then waits for the user's approval.",
 R"({"type": "object",
     "properties": {
       "title": {"type": "string", "minLength": 1, "description": "Plan title."},
       "overview": {"type": "string", "minLength": 1, "description": "What the plan achieves and how."},
       "specs": {"type": "array", "minItems": 1, "maxItems": 10,
                 "description": "The specs, 1 to 10.",
                 "items": {"type": "object",
                           "properties": {
                             "name": {"type": "string", "minLength": 1, "pattern": "^[a-z0-9](-?[a-z0-9])*-?$", "maxLength": 40,
                                      "description": "Unique within the plan and usable in a branch name: 1 to 40 characters of a-z, 0-9 and -, starting with a letter or digit, without --, e.g. auth-tokens."},
                             "title": {"type": "string", "minLength": 1, "description": "Spec title."},
                             "description": {"type": "string", "minLength": 1,
                                             "description": "What the spec covers."},
                             "dependencies": {"type": "array", "items": {"type": "string", "pattern": "^[a-z0-9](-?[a-z0-9])*-?$", "maxLength": 40},
                                              "description": "Names of other specs of this plan that must be done first; not the spec itself, and no cycles."}},
                           "required": ["name", "title", "description"],
                           "additionalProperties": false}}},
     "required": ["title", "overview", "specs"],
     "additionalProperties": false})", kNoOutputSchema},

{"create_spec", lanes::daemon, 5 * kSecond, 100000, SafetyTier::side_effecting,
 "Record the spec as structured output: name, title, overview and 1 to 7 phases (as few as the change needs), each with "
 "a unique name, title, description and optionally how to validate it. Names are 1 to 40 "
 "characters of a-z, 0-9 and -, starting with a letter or digit, without --; text fields "
 "must not be blank.",
 R"({"type": "object",
     "properties": {
       "name": {"type": "string", "minLength": 1, "pattern": "^[a-z0-9](-?[a-z0-9])*-?$", "maxLength": 40,
                "description": "The spec's name: 1 to 40 characters of a-z, 0-9 and -, starting with a letter or digit, without --."},
       "title": {"type": "string", "minLength": 1, "description": "Spec title."},
       "overview": {"type": "string", "minLength": 1, "description": "What the spec delivers."},
       "phases": {"type": "array", "minItems": 1, "maxItems": 7,
                  "description": "The phases, 1 to 7, in order: one for a small change.",
                  "items": {"type": "object",
                            "properties": {
                              "name": {"type": "string", "minLength": 1, "pattern": "^[a-z0-9](-?[a-z0-9])*-?$", "maxLength": 40,
                                       "description": "Unique within the spec: 1 to 40 characters of a-z, 0-9 and -, starting with a letter or digit, without --."},
                              "title": {"type": "string", "minLength": 1, "description": "Phase title."},
                              "description": {"type": "string", "minLength": 1,
                                              "description": "What the phase does."},
                              "validation": {"type": "string",
                                             "description": "How to check the phase is done."}},
                            "required": ["name", "title", "description"],
                            "additionalProperties": false}}},
     "required": ["name", "title", "overview", "phases"],
     "additionalProperties": false})", kNoOutputSchema},

{"create_phase", lanes::daemon, 5 * kSecond, 100000, SafetyTier::side_effecting,
 "Record the phase as structured output: name, title, objective, the tasks (each a "
 "description, optionally the file it touches and whether it creates, modifies or deletes "
 "it) and the shell command that validates the phase. The name is 1 to 40 characters of "
 "a-z, 0-9 and -, starting with a letter or digit, without --; there is at least one task; "
 "text fields and the command must not be blank.",
 R"({"type": "object",
     "properties": {
       "name": {"type": "string", "minLength": 1, "pattern": "^[a-z0-9](-?[a-z0-9])*-?$", "maxLength": 40,
                "description": "The phase's name: 1 to 40 characters of a-z, 0-9 and -, starting with a letter or digit, without --."},
       "title": {"type": "string", "minLength": 1, "description": "Phase title."},
       "objective": {"type": "string", "minLength": 1, "description": "What the phase achieves."},
       "tasks": {"type": "array", "minItems": 1,
                 "description": "The tasks, in order.",
                 "items": {"type": "object",
                           "properties": {
                             "description": {"type": "string", "minLength": 1,
                                             "description": "What to do."},
                             "file": {"type": "string",
                                      "description": "File the task touches, relative to the repository's root, without .. and not starting with /."},
                             "action": {"type": "string", "enum": ["create", "modify", "delete"],
                                        "description": "What the task does to the file."}},
                           "required": ["description"],
                           "additionalProperties": false}},
       "validation_command": {"type": "string", "minLength": 1,
                              "description": "Shell command whose exit code 0 means the phase is done."}},
     "required": ["name", "title", "objective", "tasks", "validation_command"],
     "additionalProperties": false})", kNoOutputSchema},

{"memory_search", lanes::daemon, 5 * kSecond, 50000, SafetyTier::read_only,
 "Search the notes saved with memory_save, by their words (full-text, best match first). "
 "Returns [{note_id, text, score, snippet, source, updated_at}] with the matched words in "
 "**bold** in the snippet. Any text is a fine query: it is searched as plain words.",
 R"({"type": "object",
     "properties": {
       "query": {"type": "string", "minLength": 1, "description": "Words to look for."},
       "top_k": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5,
                 "description": "Maximum number of notes to return."},
       "scope": {"type": "string", "enum": ["repo", "user"], "default": "repo",
                 "description": "repo: this repository's notes and the user's own; user: only the user's own notes (saved with scope user)."},
       "include_conversation": {"type": "boolean", "default": false,
                                "description": "Also search what the model said in earlier loops of this repository."}},
     "required": ["query"],
     "additionalProperties": false})", kMemorySearchOutput},

{"memory_save", lanes::daemon, 5 * kSecond, 10000, SafetyTier::side_effecting,
 "Save a note for later loops (it survives restarts; the user can list and delete it). "
 "Returns its note_id. Keep notes short and specific: a fact, a decision, a command that works.",
 R"({"type": "object",
     "properties": {
       "content": {"type": "string", "minLength": 1, "description": "The note's text."},
       "tags": {"type": "array", "maxItems": 16,
                "items": {"type": "string", "minLength": 1},
                "description": "Words to find the note by (each at most 64 bytes)."},
       "scope": {"type": "string", "enum": ["repo", "user"], "default": "repo",
                 "description": "repo: a note about this repository; user: a note about the user, seen from every repository."}},
     "required": ["content"],
     "additionalProperties": false})", kMemoryNoteOutput},

{"memory_update", lanes::daemon, 5 * kSecond, 10000, SafetyTier::side_effecting,
 "Replace the text (and tags, when given) of a saved note, keeping its note_id.",
 R"({"type": "object",
     "properties": {
       "note_id": {"type": "string", "minLength": 1, "description": "The note to change, e.g. note-0f8e...."},
       "content": {"type": "string", "minLength": 1, "description": "The note's new text."},
       "tags": {"type": "array", "maxItems": 16,
                "items": {"type": "string", "minLength": 1},
                "description": "The note's new tags."}},
     "required": ["note_id", "content"],
     "additionalProperties": false})", kMemoryNoteOutput},

{"memory_delete", lanes::daemon, 5 * kSecond, 10000, SafetyTier::side_effecting,
 "Delete a saved note.",
 R"({"type": "object",
     "properties": {
       "note_id": {"type": "string", "minLength": 1, "description": "The note to delete."}},
     "required": ["note_id"],
     "additionalProperties": false})", kMemoryDeleteOutput},

{"oracle", lanes::daemon, 300 * kSecond, 100000, SafetyTier::read_only,
 "Ask a second, independent model for advice: a design question, a review of an approach, "
 "a bug you are stuck on. Attach the files it needs (paths in this worktree); it sees nothing "
 "else; each file is cut to the configured size, and a path that cannot be read fails the call "
 "before anything is asked. Its tokens count against this loop's budget. Returns {answer, "
 "model, usage, cost_usd, files: [{path, bytes, truncated, cut?}]}.",
 R"({"type": "object",
     "properties": {
       "question": {"type": "string", "minLength": 1, "description": "What to ask, self-contained."},
       "files": {"type": "array", "maxItems": 100,
                 "items": {"type": "string", "minLength": 1},
                 "description": "Paths of files in the worktree to attach (read for the oracle, capped)."},
       "context": {"type": "string", "description": "Anything else it needs: an error, a plan, a diff."}},
     "required": ["question"],
     "additionalProperties": false})", kOracleOutput},
};
// clang-format on

// The traits of the built-in tools (tool_traits.hpp); a tool not listed has
// every default: runs no command, touches no file by path, no web facility,
// a JSON view, no warm worker, no model of its own, no memory notes.
struct BuiltinTraits {
  std::string_view name;
  ToolCommand command = ToolCommand::none;
  FileAccess file_access = FileAccess::none;
  WebFacility web = WebFacility::none;
  ResultView result_view = ResultView::json;
  bool warm_worker = false;
  bool consults_model = false;
  MemoryAccess memory = MemoryAccess::none;
};

constexpr BuiltinTraits kBuiltinTraits[] = {
    {.name = "read_file",
     .file_access = FileAccess::read,
     .result_view = ResultView::file,
     .warm_worker = true},
    {.name = "write_file", .file_access = FileAccess::write, .warm_worker = true},
    {.name = "edit_file", .file_access = FileAccess::write, .warm_worker = true},
    {.name = "file_delete", .file_access = FileAccess::remove, .warm_worker = true},
    {.name = "list_directory", .result_view = ResultView::directory, .warm_worker = true},
    {.name = "glob", .result_view = ResultView::paths, .warm_worker = true},
    {.name = "grep", .result_view = ResultView::grep, .warm_worker = true},
    {.name = "run_command",
     .command = ToolCommand::from_arguments,
     .result_view = ResultView::command},
    {.name = "run_command_isolated",
     .command = ToolCommand::from_arguments,
     .result_view = ResultView::command},
    {.name = "build", .command = ToolCommand::build, .result_view = ResultView::command},
    {.name = "test", .command = ToolCommand::test, .result_view = ResultView::command},
    {.name = "validate", .command = ToolCommand::validate, .result_view = ResultView::command},
    {.name = "web_fetch", .web = WebFacility::fetch},
    {.name = "web_search", .web = WebFacility::search},
    {.name = "oracle", .consults_model = true},
    {.name = "memory_search", .memory = MemoryAccess::search},
    {.name = "memory_save", .memory = MemoryAccess::save},
    {.name = "memory_update", .memory = MemoryAccess::update},
    {.name = "memory_delete", .memory = MemoryAccess::remove},
};

const BuiltinTraits* builtin_traits_of(std::string_view name) {
  for (const BuiltinTraits& traits : kBuiltinTraits) {
    if (traits.name == name) return &traits;
  }
  return nullptr;
}

void set_builtin_traits(ToolSpec& spec) {
  for (const BuiltinTraits& traits : kBuiltinTraits) {
    if (traits.name != spec.name) continue;
    spec.command = traits.command;
    spec.file_access = traits.file_access;
    spec.web = traits.web;
    spec.result_view = traits.result_view;
    spec.warm_worker = traits.warm_worker;
    spec.consults_model = traits.consults_model;
    spec.memory = traits.memory;
  }
}

}  // namespace

bool builtin_runs_commands(std::string_view tool) {
  const BuiltinTraits* traits = builtin_traits_of(tool);
  return traits != nullptr && traits->command != ToolCommand::none;
}

Catalog Catalog::builtin() {
  Catalog catalog;
  catalog.tools_.reserve(std::size(kBuiltinTools));
  for (const auto& tool : kBuiltinTools) {
    ToolSpec spec;
    spec.name = tool.name;
    spec.lane = tool.lane;
    spec.timeout_ms = tool.timeout_ms;
    spec.max_output_bytes = tool.max_output_bytes;
    spec.description = tool.description;
    spec.enabled = true;
    spec.tier = tool.tier;
    set_builtin_traits(spec);
    // The schemas above are constants checked by the test suite; a parse
    // failure here is a build defect, not a user error.
    spec.input_schema = nlohmann::json::parse(tool.input_schema);
    if (!tool.output_schema.empty()) spec.output_schema = nlohmann::json::parse(tool.output_schema);
    catalog.tools_.push_back(std::move(spec));
  }
  return catalog;
}

}  // namespace loopr::config
