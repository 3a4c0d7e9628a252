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
  std::string_view input_schema;  // JSON
};

constexpr std::int64_t kSecond = 1000;

// clang-format off
constexpr BuiltinTool kBuiltinTools[] = {
{"read_file", lanes::no_net, 10 * kSecond, 100000, SafetyTier::read_only,
 "Read a text file from the worktree. Returns numbered lines in `cat -n` style "
 "(`%6d|line`), starting at `offset` (1-based) for at most `limit` lines, plus the file's total "
 "line count and whether more lines remain; page through a long file by raising `offset`. "
 "Lines over 2000 characters are cut and end with `...`. Binary files are refused. You must "
 "read a file before you edit or overwrite it.",
 R"({"type": "object",
     "properties": {
       "path": {"type": "string", "minLength": 1,
                "description": "File path, relative to the worktree (an absolute path must lie inside it)."},
       "offset": {"type": "integer", "minimum": 1, "default": 1,
                  "description": "First line to return, 1-based."},
       "limit": {"type": "integer", "minimum": 1, "default": 2000,
                 "description": "Maximum number of lines to return."}},
     "required": ["path"],
     "additionalProperties": false})"},

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
     "additionalProperties": false})"},

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
     "additionalProperties": false})"},

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
     "additionalProperties": false})"},

{"list_directory", lanes::no_net, 5 * kSecond, 100000, SafetyTier::read_only,
 "List a folder of the worktree: each entry with its path, size and whether it is a folder. "
 "With `recursive`, descends up to `max_depth` levels. Long listings are capped; narrow the "
 "path or use glob.",
 R"({"type": "object",
     "properties": {
       "path": {"type": "string", "default": ".",
                "description": "Folder to list, relative to the worktree."},
       "recursive": {"type": "boolean", "default": false,
                     "description": "Also list the contents of sub-folders."},
       "max_depth": {"type": "integer", "minimum": 1, "default": 10,
                     "description": "How many levels to descend when recursive."}},
     "additionalProperties": false})"},

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
     "additionalProperties": false})"},

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
     "additionalProperties": false})"},

{"run_command", lanes::net, 120 * kSecond, 100000, SafetyTier::privileged,
 "Run a shell command (`sh -c`) in the worktree, with network access. stdin is empty. Returns "
 "exit_code, stdout, stderr, timed_out and truncated. Prefer the file tools for reading, "
 "searching and editing files.",
 R"({"type": "object",
     "properties": {
       "command": {"type": "string", "minLength": 1, "description": "Shell command to run."},
       "timeout_ms": {"type": "integer", "minimum": 1,
                      "description": "Stop the command after this many milliseconds (at most the tool's configured timeout)."},
       "cwd": {"type": "string",
               "description": "Folder to run in, relative to the worktree (default: the worktree)."}},
     "required": ["command"],
     "additionalProperties": false})"},

{"run_command_isolated", lanes::no_net, 120 * kSecond, 100000, SafetyTier::privileged,
 "Run a shell command (`sh -c`) in the worktree without any network access. stdin is empty. "
 "Returns exit_code, stdout, stderr, timed_out and truncated.",
 R"({"type": "object",
     "properties": {
       "command": {"type": "string", "minLength": 1, "description": "Shell command to run."},
       "timeout_ms": {"type": "integer", "minimum": 1,
                      "description": "Stop the command after this many milliseconds (at most the tool's configured timeout)."},
       "cwd": {"type": "string",
               "description": "Folder to run in, relative to the worktree (default: the worktree)."}},
     "required": ["command"],
     "additionalProperties": false})"},

{"build", lanes::heavy, 600 * kSecond, 1000000, SafetyTier::privileged,
 "Run the project's configured build command in the worktree and return its exit code and "
 "output. Takes no arguments.",
 R"({"type": "object", "properties": {}, "additionalProperties": false})"},

{"test", lanes::heavy, 600 * kSecond, 1000000, SafetyTier::privileged,
 "Run the project's configured test command in the worktree and return its exit code and "
 "output. Takes no arguments.",
 R"({"type": "object", "properties": {}, "additionalProperties": false})"},

{"validate", lanes::heavy, 600 * kSecond, 1000000, SafetyTier::privileged,
 "Run the loop's validation command in the worktree and return its exit code and output; "
 "exit code 0 means the work passes. Takes no arguments.",
 R"({"type": "object", "properties": {}, "additionalProperties": false})"},

{"web_fetch", lanes::net, 30 * kSecond, 500000, SafetyTier::side_effecting,
 "Fetch an http(s) URL and return its content as markdown (default), plain text or raw HTML. "
 "Private, loopback and link-local addresses are refused.",
 R"({"type": "object",
     "properties": {
       "url": {"type": "string", "minLength": 1, "description": "http:// or https:// URL."},
       "format": {"type": "string", "enum": ["markdown", "text", "html"], "default": "markdown",
                  "description": "How to return the page."}},
     "required": ["url"],
     "additionalProperties": false})"},

{"web_search", lanes::net, 30 * kSecond, 50000, SafetyTier::side_effecting,
 "Search the web and return the top results (title, URL, snippet). Use web_fetch to read a "
 "result.",
 R"({"type": "object",
     "properties": {
       "query": {"type": "string", "minLength": 1, "description": "Search query in natural language."},
       "max_results": {"type": "integer", "minimum": 1, "maximum": 10, "default": 5,
                       "description": "How many results to return."}},
     "required": ["query"],
     "additionalProperties": false})"},

{"complete_task", lanes::daemon, 1 * kSecond, 10000, SafetyTier::side_effecting,
 "Declare the task finished. Call it once, when the work is done, with a summary of what you "
 "did; the loop then runs its validation.",
 R"({"type": "object",
     "properties": {
       "summary": {"type": "string", "minLength": 1,
                   "description": "What was accomplished, and anything left undone."}},
     "required": ["summary"],
     "additionalProperties": false})"},

{"create_plan", lanes::daemon, 5 * kSecond, 100000, SafetyTier::side_effecting,
 "Record the plan as structured output: a title, an overview and 1 to 10 specs with unique "
 "names; a spec's dependencies name other specs of this plan. The plan then waits for the "
 "user's approval.",
 R"({"type": "object",
     "properties": {
       "title": {"type": "string", "minLength": 1, "description": "Plan title."},
       "overview": {"type": "string", "minLength": 1, "description": "What the plan achieves and how."},
       "specs": {"type": "array", "minItems": 1, "maxItems": 10,
                 "description": "The specs, 1 to 10.",
                 "items": {"type": "object",
                           "properties": {
                             "name": {"type": "string", "minLength": 1,
                                      "description": "Unique short identifier, e.g. auth-tokens."},
                             "title": {"type": "string", "minLength": 1, "description": "Spec title."},
                             "description": {"type": "string", "minLength": 1,
                                             "description": "What the spec covers."},
                             "dependencies": {"type": "array", "items": {"type": "string"},
                                              "description": "Names of specs of this plan that must be done first."}},
                           "required": ["name", "title", "description"],
                           "additionalProperties": false}}},
     "required": ["title", "overview", "specs"],
     "additionalProperties": false})"},

{"create_spec", lanes::daemon, 5 * kSecond, 100000, SafetyTier::side_effecting,
 "Record the spec as structured output: name, title, overview and 3 to 7 phases, each with "
 "a name, title, description and optionally how to validate it.",
 R"({"type": "object",
     "properties": {
       "name": {"type": "string", "minLength": 1, "description": "The spec's name."},
       "title": {"type": "string", "minLength": 1, "description": "Spec title."},
       "overview": {"type": "string", "minLength": 1, "description": "What the spec delivers."},
       "phases": {"type": "array", "minItems": 3, "maxItems": 7,
                  "description": "The phases, 3 to 7, in order.",
                  "items": {"type": "object",
                            "properties": {
                              "name": {"type": "string", "minLength": 1, "description": "Unique short identifier."},
                              "title": {"type": "string", "minLength": 1, "description": "Phase title."},
                              "description": {"type": "string", "minLength": 1,
                                              "description": "What the phase does."},
                              "validation": {"type": "string",
                                             "description": "How to check the phase is done."}},
                            "required": ["name", "title", "description"],
                            "additionalProperties": false}}},
     "required": ["name", "title", "overview", "phases"],
     "additionalProperties": false})"},

{"create_phase", lanes::daemon, 5 * kSecond, 100000, SafetyTier::side_effecting,
 "Record the phase as structured output: name, title, objective, the tasks (each a "
 "description, optionally the file it touches and whether it creates, modifies or deletes "
 "it) and the shell command that validates the phase.",
 R"({"type": "object",
     "properties": {
       "name": {"type": "string", "minLength": 1, "description": "The phase's name."},
       "title": {"type": "string", "minLength": 1, "description": "Phase title."},
       "objective": {"type": "string", "minLength": 1, "description": "What the phase achieves."},
       "tasks": {"type": "array", "minItems": 1,
                 "description": "The tasks, in order.",
                 "items": {"type": "object",
                           "properties": {
                             "description": {"type": "string", "minLength": 1,
                                             "description": "What to do."},
                             "file": {"type": "string", "description": "File the task touches."},
                             "action": {"type": "string", "enum": ["create", "modify", "delete"],
                                        "description": "What the task does to the file."}},
                           "required": ["description"],
                           "additionalProperties": false}},
       "validation_command": {"type": "string", "minLength": 1,
                              "description": "Shell command whose exit code 0 means the phase is done."}},
     "required": ["name", "title", "objective", "tasks", "validation_command"],
     "additionalProperties": false})"},

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
     "additionalProperties": false})"},

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
     "additionalProperties": false})"},

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
     "additionalProperties": false})"},

{"memory_delete", lanes::daemon, 5 * kSecond, 10000, SafetyTier::side_effecting,
 "Delete a saved note.",
 R"({"type": "object",
     "properties": {
       "note_id": {"type": "string", "minLength": 1, "description": "The note to delete."}},
     "required": ["note_id"],
     "additionalProperties": false})"},

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
     "additionalProperties": false})"},
};
// clang-format on

}  // namespace

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
    // The schemas above are constants checked by the test suite; a parse
    // failure here is a build defect, not a user error.
    spec.input_schema = nlohmann::json::parse(tool.input_schema);
    catalog.tools_.push_back(std::move(spec));
  }
  return catalog;
}

}  // namespace loopr::config
