// The tool catalog: for every tool, the lane that runs it, its limits, its
// safety tier and the JSON Schema of its arguments (DESIGN §5, §6).
//
// Sources, in order, later wins per field (DESIGN §2): the built-in defaults
// (builtin_catalog.cpp), then $XDG_CONFIG_HOME/loopr/catalog.toml, then
// <repo>/.loopr/catalog.toml. A file is a set of [tools.<name>] tables:
//
//   [tools.grep]                 # override only what you set
//   timeout_ms = 90000
//
//   [tools.lint]                 # a new tool: lane, description and
//   lane = "heavy"               # input_schema are required
//   description = "Run the linter"
//   input_schema = '''{"type": "object", "properties": {},
//                      "additionalProperties": false}'''
//
// Keys: lane, timeout_ms, max_output_bytes, description, enabled, tier,
// command and result_view (tool_traits.hpp; a repository file may set
// neither), input_schema (a JSON string), output_schema (a JSON string; "" removes the
// tool's output schema). Any mistake is a loopr::ConfigError
// "FILE:LINE: tools.NAME.KEY: what is wrong".
#pragma once

#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/tool_traits.hpp"

namespace loopr::config {

// Drives scheduling and approval (DESIGN §6): read-only calls of one model
// turn run in parallel, others in order; privileged ones may wait for approval.
enum class SafetyTier { read_only, side_effecting, privileged };

// "read-only", "side-effecting", "privileged"
std::string_view to_string(SafetyTier tier);
std::optional<SafetyTier> parse_safety_tier(std::string_view text);

// Lanes. The first three are served by loopr-runner processes; "daemon" tools
// (complete_task, create_*, memory_*) are handled inside looprd and never
// reach a runner, so a tool never moves between the two kinds.
namespace lanes {
inline constexpr std::string_view no_net = "no-net";
inline constexpr std::string_view net = "net";
inline constexpr std::string_view heavy = "heavy";
inline constexpr std::string_view daemon = "daemon";
}  // namespace lanes
inline constexpr std::string_view kLanes[] = {lanes::no_net, lanes::net, lanes::heavy,
                                              lanes::daemon};
inline constexpr std::string_view kRunnerLanes[] = {lanes::no_net, lanes::net, lanes::heavy};
bool is_known_lane(std::string_view lane);
bool is_runner_lane(std::string_view lane);

// Upper bounds a file may set. A job's whole output travels back in one
// runner frame capped at 16 MiB (DESIGN §4) after a lossless escape that may
// grow it, hence 8 MiB; a day is the longest timeout that still means one.
inline constexpr std::int64_t kMaxOutputBytesLimit = 8 * 1024 * 1024;
inline constexpr std::int64_t kMaxTimeoutMs = 24LL * 60 * 60 * 1000;

struct ToolSpec {
  std::string name;
  std::string lane;                   // one of kLanes
  std::int64_t timeout_ms = 0;        // > 0
  std::int64_t max_output_bytes = 0;  // > 0, ≤ kMaxOutputBytesLimit
  std::string description;            // written for the model
  bool enabled = true;
  SafetyTier tier = SafetyTier::privileged;
  // Traits (config/tool_traits.hpp): what looprd, the runners and loops act
  // on instead of the tool's name.
  ToolCommand command = ToolCommand::none;
  FileAccess file_access = FileAccess::none;
  WebFacility web = WebFacility::none;
  ResultView result_view = ResultView::json;
  bool warm_worker = false;                  // a lane's warm workers may serve its calls
  bool consults_model = false;               // a daemon tool that spends model tokens (oracle)
  MemoryAccess memory = MemoryAccess::none;  // a daemon tool over the memory notes
  nlohmann::json input_schema;               // passes check_tool_schema()
  // The shape of the tool's JSON output when a call succeeds (tool.call's
  // `output` with ok true), for clients that check results against it (MCP's
  // outputSchema); passes check_tool_schema(). Null: the output has no fixed
  // shape, or nobody described it.
  nlohmann::json output_schema;
};

// Whether a call of `tool` may run twice, or beside other such calls, and
// change nothing: its tier is read-only AND loopr's own implementation of it
// writes and deletes no file (file_access). A user's catalog may set any
// tool's tier to read-only, to skip its approvals; for a command tool that
// is the user's word that its command changes nothing (a status or a lint),
// but it must not make a write_file or an edit_file run again after a crash,
// or in parallel with the calls around it.
inline bool changes_nothing(const ToolSpec& tool) {
  return tool.tier == SafetyTier::read_only &&
         (tool.file_access == FileAccess::none || tool.file_access == FileAccess::read);
}

// Who wrote a catalog file. The user's own files may change anything. A
// repository's `.loopr/catalog.toml` arrives with code the user may not have
// read (a clone, a dependency, a prompt-injected commit), so it may only
// tighten: lower timeout_ms and max_output_bytes, disable a tool, raise its
// tier. It may not add tools, move them to another lane, or rewrite their
// descriptions or input schemas (which the model reads as instructions) or
// output schemas (which clients check results against).
enum class CatalogTrust { user, repository };

class Catalog {
 public:
  // Every tool of DESIGN §5 with its default lane, limits, tier and schema.
  static Catalog builtin();
  // builtin(), then each of `user_files` that exists, in order, then
  // `repository_file` if it is given and exists, as CatalogTrust::repository.
  // A file that exists but cannot be read or is wrong is a ConfigError.
  static Catalog load(const std::vector<std::string>& user_files,
                      const std::string& repository_file = {});

  // Merges one catalog file over this catalog; all-or-nothing: on a
  // ConfigError the catalog is unchanged. `name` is the file name used in
  // error messages.
  void merge_file(const std::string& path, CatalogTrust trust = CatalogTrust::user);
  void merge_toml(std::istream& in, const std::string& name,
                  CatalogTrust trust = CatalogTrust::user);

  // The pointers stay valid until the next merge.
  const ToolSpec* find(std::string_view name) const;
  // The first enabled tool whose command trait is `command`, built-in tools
  // first, or nullptr.
  const ToolSpec* first_enabled_with(ToolCommand command) const;
  std::vector<const ToolSpec*> enabled_tools() const;
  // All tools, enabled or not: built-in ones in DESIGN §5 order, then added
  // ones in the order their files defined them.
  const std::vector<ToolSpec>& tools() const& { return tools_; }
  // On a temporary catalog, the tools themselves (a reference would dangle).
  std::vector<ToolSpec> tools() && { return std::move(tools_); }

 private:
  std::vector<ToolSpec> tools_;
};

// Whether loopr's own implementation of built-in tool `tool` runs a shell
// command (run_command, run_command_isolated, build, test, validate): a file
// may change which command it runs, never that it runs one.
bool builtin_runs_commands(std::string_view tool);

// The tool list handed to an LLM: [{"name", "description", "input_schema"}]
// for the enabled tools, in catalog order; with `only` (a loop type's tool
// list), just those, in that order, leaving out disabled ones. A name in
// `only` that the catalog does not know is a ConfigError.
nlohmann::json llm_tool_definitions(const Catalog& catalog,
                                    const std::vector<std::string>& only = {});

}  // namespace loopr::config
